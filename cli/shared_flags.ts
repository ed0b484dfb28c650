/**
 * Flags several commands share, declared once (cli/flags.ts); a command's schema picks them and may
 * change their presence (`GOOD.required()`) or doc line. COMMON_FLAGS are taken by every command.
 */
import { WEIGHT_DTYPES } from '../workers/engine/model/load';
import { MAX_THREADS } from '../workers/engine/backend/gemm_threads';
import { bool, int, num, oneOf, text } from './flags';

/** Flags every command takes (documented once, in the common section of --help). */
export const COMMON_FLAGS = {
  model: text('DIR|ID', { nonEmpty: true }).required().describe('the model: a folder (config.json, tokenizer.json, model.safetensors or model.gguf) or a Hub id org/name[@revision]'),
  endpoint: text('URL', { nonEmpty: true }).describe('a Hub mirror for --model and --sae (default $HF_ENDPOINT, else https://huggingface.co)'),
  weights: oneOf(WEIGHT_DTYPES).default('f32').describe('weight storage (see Weight storage)'),
  threads: int({ min: 1, max: MAX_THREADS }).describe('CPU threads for the matrix products (default: the logical cores, at most 8)'),
  experiment: text('FILE', { nonEmpty: true }).describe('an experiment saved by the workbench; flags given too win (see Experiment files)'),
};

export const PROMPT = text().required().describe('the prompt');
export const GOOD = text().describe('the good future (alternatives separated by "|")');
export const BAD = text().describe('the bad future');
export const CHAT_TEMPLATE = bool().default(false).describe("wrap the prompt in the tokenizer's chat template");
export const SYSTEM = text().describe('with --chat-template true: the system prompt before the user turn');
export const TOOLS = text('FILE.json', { nonEmpty: true }).describe('with --chat-template true: the tools offered, a JSON list [{"type": "function", "function": {"name", "description", "parameters"}}]');
export const ENABLE_THINKING = bool().describe("with --chat-template true: the template's enable_thinking (Qwen3: false writes the empty <think></think> block; default: not passed, the template's default)");
export const INTERVENTION = text('JSON', { nonEmpty: true }).repeatable().describe('a steering intervention, applied in order (see Interventions)');
export const MAX_NEW_TOKENS = int({ min: 1, max: 1 << 20 }).default(32).describe('new tokens to generate');
export const TEMPERATURE = num({ min: 0, max: 1e6 }).default(0).describe('sampling temperature (0 = greedy)');
export const TOP_K = int({ min: 0 }).default(0).describe('sample from the K most likely tokens (0 = all)');
export const SEED = int({ min: 0, max: 2 ** 32 - 1 }).default(0).describe('sampling seed');
export const PROGRESS = bool().default(false).describe('progress to stderr');
export const EPS = num({ min: 0, max: 1 }).default(0.3).describe('sink threshold ε: a head sinks when α_0 ≥ ε');
export const K_MAX = int({ min: 0 }).describe('the last start step K (default N-1)');
export const SET = text('FILE', { nonEmpty: true }).describe('a labelled prompt set (.json, .jsonl or .csv)');
export const FOLDS = int({ min: 2 }).describe('cross-validation folds, at most the smaller class (default 5, or the smaller class)');
export const PROBE_SEED = int({ min: 0, max: 2 ** 32 - 1 }).describe('the folds\' and the control\'s seed (default 0)');
