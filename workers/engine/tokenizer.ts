import { AutoTokenizer, env, type PreTrainedTokenizer } from '@huggingface/transformers';
import type { ModelFiles } from './io/model_files';
import { adaptTokenizer } from './prompt';

const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'generation_config.json', 'config.json'];
const ROOT = '/__branchpoint__/';
let served = new Map<string, Uint8Array>();
let loads = 0;

/**
 * Loads the model's tokenizer with transformers.js `AutoTokenizer` from files we already hold:
 * transformers.js's custom-cache hook serves them, so nothing goes to the network.
 * @throws Error when tokenizer.json is missing or transformers.js cannot build the tokenizer.
 */
export async function loadTokenizer(files: ModelFiles): Promise<PreTrainedTokenizer> {
  if (!(await files.has('tokenizer.json'))) throw new Error(`${files.label}: tokenizer.json is missing (the tokenizer is needed to read prompts)`);
  // A fresh id per load: transformers.js memoises nothing by id, but a plain [a-z0-9] path keeps its URL joining simple.
  const id = `branchpoint/model${++loads}`;
  served = new Map();
  for (const f of TOKENIZER_FILES) if (await files.has(f)) served.set(`${ROOT}${id}/${f}`, await files.bytes(f));
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = ROOT;
  env.useBrowserCache = false;
  env.useFSCache = false;
  env.useCustomCache = true;
  env.customCache = {
    async match(request: string) {
      const b = served.get(request);
      return b ? new Response(b.slice()) : undefined;
    },
    async put() {},
  };
  try {
    return await AutoTokenizer.from_pretrained(id);
  } catch (e) {
    throw new Error(`${files.label}: could not build the tokenizer (${(e as Error).message})`);
  }
}

/**
 * Compares the tokenizer's vocabulary with the embedding matrix's rows (vocab_size).
 * @returns warnings: when the tokenizer covers less than 90 % of the rows (checkpoints pad the
 *   embedding by a few rows, e.g. Phi-3 32011 of 32064; a much smaller tokenizer belongs to
 *   another model: prompts would use only its ids and margins would compare the wrong tokens); and
 *   when special tokens lie beyond the matrix — google/gemma-3-1b-it's tokenizer carries the
 *   multimodal `<image_soft_token>` at id 262144 while its text model has 262,144 rows
 *   (huggingface/transformers#37011) — which the engine's embedding refuses if a prompt holds one.
 * @throws Error naming both sizes when the tokenizer has ordinary (non-special) ids beyond the
 *   embedding matrix.
 */
export function checkVocabulary(tokenizer: PreTrainedTokenizer, dVocab: number, label: string): string[] {
  const vocab = adaptTokenizer(tokenizer).vocabulary();
  const special = new Set(tokenizer.all_special_ids);
  let maxId = -1;
  const beyond: [string, number][] = [];
  for (const [piece, id] of vocab) {
    if (id < dVocab) continue;
    if (special.has(id)) beyond.push([piece, id]);
    else maxId = Math.max(maxId, id);
  }
  if (maxId >= dVocab) throw new Error(`${label}: tokenizer.json has token id ${maxId}, but the embedding matrix has ${dVocab} rows (config.json vocab_size): the tokenizer belongs to another model`);
  const warnings: string[] = [];
  if (vocab.length < 0.9 * dVocab) warnings.push(`${label}: tokenizer.json has ${vocab.length} tokens but the embedding matrix has ${dVocab} rows (vocab_size); is the tokenizer from another model?`);
  if (beyond.length) warnings.push(`${label}: the special token${beyond.length > 1 ? 's' : ''} ${beyond.map(([p, id]) => `${p} (id ${id})`).join(', ')} lie${beyond.length > 1 ? '' : 's'} beyond the embedding matrix's ${dVocab} rows (vocab_size): a prompt holding ${beyond.length > 1 ? 'one' : 'it'} is refused`);
  return warnings;
}
