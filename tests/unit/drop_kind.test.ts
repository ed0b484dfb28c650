/**
 * Where a drop goes (app/lib/drop_kind.ts): each kind the pickers take, as dropped folders and as
 * lone files, and junk refused with what was dropped and why. Paths are written out by hand here
 * (the files users drop: the bundled model folder's names, a SAELens folder, a Gemma Scope npz).
 */
import { describe, expect, it } from 'vitest';
import { classifyDrop, needsJsonKeys } from '../../app/lib/drop_kind';

const files = (...p: string[]) => p.map((path) => ({ path }));

describe('classifyDrop', () => {
  it.each([
    ['a model folder (safetensors)', files('stories260K/config.json', 'stories260K/tokenizer.json', 'stories260K/model.safetensors', 'stories260K/onnx/model.onnx'), 'model'],
    ['a model\'s files, sharded', files('config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json'), 'model'],
    ['a model folder (gguf)', files('m/config.json', 'm/model.gguf'), 'model'],
    ['a lone .gguf', files('tiny.gguf'), 'model'],
    ['a SAELens folder', files('sae/cfg.json', 'sae/sae_weights.safetensors', 'sae/sparsity.safetensors'), 'sae'],
    ['a Gemma Scope params.npz', files('params.npz'), 'sae'],
    ['a .npy vector', files('happy.npy'), 'vector'],
    ['a .safetensors vector', files('v.safetensors'), 'vector'],
    ['a values table (.csv)', files('name_swap.values.csv'), 'studyTable'],
    ['a values table (.jsonl)', files('distractor.values.jsonl'), 'studyTable'],
    ['a values table (.tsv)', files('t.tsv'), 'studyTable'],
  ])('%s → %s', (_, f, kind) => {
    expect(classifyDrop(f)).toEqual({ kind });
  });

  it.each([
    [['format', 'version', 'model', 'prompt'], 'experiment'],
    [['vector', 'hook'], 'vector'],
    [['name', 'classes', 'positive', 'negative', 'position'], 'promptSet'],
  ])('a lone .json with keys %j → %s', (keys, kind) => {
    expect(needsJsonKeys(files('x.json'))).toBe(true);
    expect(classifyDrop(files('x.json'), keys)).toEqual({ kind });
  });

  it('refuses junk naming what was dropped and what is taken', () => {
    const why = (f: { path: string }[], keys?: string[] | null) => {
      const t = classifyDrop(f, keys);
      expect(t.kind).toBe('refused');
      return t.kind === 'refused' ? t.why : '';
    };
    expect(why([])).toMatch(/no files/);
    expect(why(files('notes.txt'))).toMatch(/^Cannot open “notes.txt”: files ending \.txt are not taken here\. Drop a model folder/);
    expect(why(files('README'))).toMatch(/files ending \.\(no extension\)/);
    expect(why(files('m/config.json', 'm/tokenizer.json'))).toMatch(/2 files \(config\.json, tokenizer\.json\): a model folder needs its weights/);
    expect(why(files('s/cfg.json', 's/other.bin'))).toMatch(/an SAE folder needs sae_weights\.safetensors/);
    expect(why(files('a.npy', 'b.npy'))).toMatch(/several files are taken only as a model folder or an SAE folder/);
    expect(why(files('x.json'), null)).toMatch(/“x\.json”: it is not a JSON object/);
    expect(why(files('t.json'), ['prompt', 'good', 'bad'])).toMatch(/keys "prompt", "good", "bad" is none of the files taken here/);
    // a contrast set (positive/negative without classes) is not a labelled prompt set
    expect(why(files('happy_sad.json'), ['name', 'positive', 'negative'])).toMatch(/none of the files taken here/);
  });

  it('asks for the keys of a lone .json, and only then', () => {
    expect(needsJsonKeys(files('a.json', 'b.json'))).toBe(false);
    expect(needsJsonKeys(files('a.npy'))).toBe(false);
    expect(() => classifyDrop(files('x.json'))).toThrow(/needs its top-level keys/);
  });
});
