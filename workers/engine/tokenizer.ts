import { AutoTokenizer, env, type PreTrainedTokenizer } from '@huggingface/transformers';
import type { ModelFiles } from './io/model_files';

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

/** Largest loop bound a chat template may state (templates iterate over messages, never this far). */
export const MAX_TEMPLATE_RANGE = 10_000;
/** Longest chat template accepted, in characters (released templates are under 20 000). */
export const MAX_TEMPLATE_CHARS = 200_000;

/**
 * Refuses a chat template that would run without bound before it is rendered (the Jinja
 * interpreter has no step limit and runs synchronously): a template longer than
 * MAX_TEMPLATE_CHARS, or a range() whose literal bound exceeds MAX_TEMPLATE_RANGE, or
 * string/list repetition by a literal factor above it ("x" * 1e9).
 * @throws Error naming tokenizer_config.json chat_template and the construct at fault.
 */
export function chatTemplateGuard(template: unknown): void {
  const texts = typeof template === 'string' ? [template]
    : Array.isArray(template) ? template.map((t) => (t as { template?: unknown })?.template).filter((t): t is string => typeof t === 'string') : [];
  for (const t of texts) {
    if (t.length > MAX_TEMPLATE_CHARS) throw new Error(`tokenizer_config.json chat_template is ${t.length} characters; expected at most ${MAX_TEMPLATE_CHARS}`);
    for (const m of t.matchAll(/range\s*\(([^)]*)\)/g)) {
      for (const n of m[1].match(/\d[\d_]*(?:\.\d+)?(?:e\d+)?/gi) ?? []) {
        if (Number(n.replace(/_/g, '')) > MAX_TEMPLATE_RANGE) throw new Error(`tokenizer_config.json chat_template loops over ${m[0]}; a bound above ${MAX_TEMPLATE_RANGE} would hang the tab, so the template is refused`);
      }
    }
    for (const m of t.matchAll(/\*\s*(\d[\d_]*(?:e\d+)?)/gi)) {
      if (Number(m[1].replace(/_/g, '')) > MAX_TEMPLATE_RANGE) throw new Error(`tokenizer_config.json chat_template repeats a value ${m[1]} times; above ${MAX_TEMPLATE_RANGE} the template is refused`);
    }
  }
}

/**
 * Compares the tokenizer's vocabulary with the embedding matrix's rows (vocab_size).
 * @returns a warning when the tokenizer covers less than 90 % of the rows (checkpoints pad the
 *   embedding by a few rows, e.g. Phi-3 32011 of 32064; a much smaller tokenizer belongs to
 *   another model: prompts would use only its ids and margins would compare the wrong tokens).
 * @throws Error naming both sizes when the tokenizer has ids beyond the embedding matrix.
 */
export function checkVocabulary(tokenizer: PreTrainedTokenizer, dVocab: number, label: string): string[] {
  const v = (tokenizer as unknown as { get_vocab(): Map<string, number> | Record<string, number> }).get_vocab();
  const ids = v instanceof Map ? [...v.values()] : Object.values(v);
  let maxId = -1;
  for (const id of ids) if (id > maxId) maxId = id;
  if (maxId >= dVocab) throw new Error(`${label}: tokenizer.json has token id ${maxId}, but the embedding matrix has ${dVocab} rows (config.json vocab_size): the tokenizer belongs to another model`);
  if (ids.length < 0.9 * dVocab) return [`${label}: tokenizer.json has ${ids.length} tokens but the embedding matrix has ${dVocab} rows (vocab_size); is the tokenizer from another model?`];
  return [];
}
