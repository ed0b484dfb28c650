/**
 * The experiment file (docs/experiment-format.md): everything needed to rerun what the workbench
 * shows — model, prompt, futures, interventions with their vectors, generation settings, the view
 * and its settings — as versioned JSON. The browser writes it to a file, to the URL hash and to
 * local storage; the runner reads it (`branchpoint margins --experiment FILE`). Validation is a zod
 * schema; every failure says what is wrong and where.
 */
import { z } from 'zod';
import { hookInfo } from './model/hooks';
import type { PositionSelector } from './model/intervention';
import { ABLATE_MODES, INTERVENTION_TYPES, type InterventionSpec } from './steering/spec';
import { assertUtf8Text, DuplicateKeyError, parseStrictJson } from './io/strict_json';

// No `new Function` probe or JIT-compiled parsers: the built site's CSP has no 'unsafe-eval'
// (tools/csp.ts), and zod's probe is reported as a policy violation even though it is caught.
z.config({ jitless: true });

/** The format tag every experiment carries. */
export const EXPERIMENT_FORMAT = 'branchpoint-experiment';
/**
 * The newest version this code reads and the one it writes. Version 2 added `view.selection` (the
 * token-strip selection) and the activations view's hook (`view.hook`) being written; version 3
 * added each vector's `alpha` (the α Apply and a heatmap click place it with) and `file` (the file
 * it was imported from): every field the vector library shows. Version 1 and 2 files read as
 * before (absent fields take their defaults: α 1, no file). Version 3 also added `modelB` (the
 * second model of the Compare view; absent: none).
 */
export const EXPERIMENT_VERSION = 3;
/** Every version this code reads. */
export const EXPERIMENT_VERSIONS = [1, 2, 3] as const;

/** Why an experiment could not be read: 'corrupt' (not JSON / not decodable), 'version' (newer than this app), 'invalid' (schema). */
export class ExperimentError extends Error {
  override name = 'ExperimentError';
  constructor(readonly kind: 'corrupt' | 'version' | 'invalid', message: string) {
    super(message);
  }
}

const int = z.number().int().nonnegative();
const positions: z.ZodType<PositionSelector> = z.union([
  z.enum(['all', 'prompt', 'generated']),
  z.array(int),
  z.object({ start: int, end: int }),
]);

/**
 * A bundled model's name is a folder name under models/ (it becomes a path in the runner and a URL
 * in the app): letters, digits, '.', '_', '-', not starting with '.'. Whether this copy ships it is
 * checked against the bundled manifest where it is opened (bundledModelName).
 */
export const BUNDLED_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const model = z.discriminatedUnion('kind', [
  /** Shipped with the app under models/<name>/ (stories260K). */
  z.object({ kind: z.literal('bundled'), name: z.string().min(1).regex(BUNDLED_NAME, 'a bundled model is named by its folder under models/ (letters, digits, ".", "_", "-"; no "/" or "..")') }),
  /** A Hugging Face Hub repo at a revision, optionally through a mirror. */
  z.object({ kind: z.literal('hub'), repo: z.string().min(1), revision: z.string().min(1).default('main'), endpoint: z.string().optional() }),
  /** A folder served at a URL (self-hosted mirror prefix). */
  z.object({ kind: z.literal('url'), url: z.string().min(1), label: z.string().optional() }),
  /** A folder the user picked: it cannot be reopened from a link, only named. */
  z.object({ kind: z.literal('local'), name: z.string().min(1) }),
]);

/** A future as written: text ("|" between alternatives), ids ("274 287 | 317"), or a tool call (value: JSON {"name", "arguments"}, a tool of `tools`). */
const future = z.object({ mode: z.enum(['text', 'ids', 'tool']), value: z.string() });

/** A tool offered to the model (apply_chat_template's `tools`): {type: 'function', function: {name, description?, parameters?}}. */
const tool = z.object({
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() }),
});

const vector = z.object({
  name: z.string().min(1),
  /** Hook it was built at (null: an imported file that does not say). */
  hook: z.string().nullable(),
  model: z.string().nullable(),
  /** Row width d (d_model, or d_head for one head). */
  dModel: z.number().int().positive(),
  provenance: z.object({
    method: z.enum(['actadd', 'caa', 'file']),
    position: z.string(),
    positive: z.array(z.string()),
    negative: z.array(z.string()),
    head: int.optional(),
  }),
  createdAt: z.string().default(''),
  /** The α Apply and a heatmap cell place it with (the library's α field; v3). Absent: 1. */
  alpha: z.number().refine(Number.isFinite, 'must be finite').optional(),
  /** The name of the file it was imported from (v3). */
  file: z.string().optional(),
  /** [dModel] float32 values as JSON numbers; null when left out of a link that would be too long. */
  values: z.array(z.number().refine(Number.isFinite, 'must be a finite number').refine((x) => Number.isFinite(Math.fround(x)), { error: (i) => `is ${String(i.input)}, beyond the float32 range (±3.4e38): the vector is stored as float32` })).nullable(),
}).refine((v) => v.values === null || v.values.length === v.dModel, { message: 'values must have dModel entries' });

/**
 * Where an SAE came from, so a link can load it again: a Hub folder (repo + path, never a token), a
 * URL folder, or a local folder/file (named only: the user opens it again).
 */
const saeSource = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('hub'), repo: z.string().min(1), path: z.string().default(''), revision: z.string().default('main'), endpoint: z.string().optional() }),
  z.object({ kind: z.literal('url'), url: z.string().min(1), label: z.string().optional() }),
  z.object({ kind: z.literal('local'), name: z.string() }),
]);

/** An SAE the experiment's feature interventions use (v2). */
const sae = z.object({
  source: saeSource,
  /** Its hook (TransformerLens name); needed to reload a bare Gemma Scope params.npz. */
  hook: z.string().optional(),
  /** How the app named it. */
  label: z.string().default(''),
});

const intervention = z.object({
  enabled: z.boolean().default(true),
  hook: z.string().min(1),
  type: z.enum(INTERVENTION_TYPES),
  /** α (add, add_norm_preserving); θ in radians or t (rotate, per rotateBy). */
  dose: z.number().refine(Number.isFinite, 'must be finite').default(0),
  rotateBy: z.enum(['theta', 't']).default('theta'),
  mode: z.enum(ABLATE_MODES).default('zero'),
  /** Index into `vectors`, or null for types without one (patch, ablate zero). */
  vector: int.nullable().default(null),
  /** patch: the prompt whose activations are patched in; patch_route: the prompt whose chosen experts are. */
  source: z.string().default(''),
  /** An SAE feature intervention (v2): steer along W_dec[feature] (type add) or clamp it (sae_clamp); `index` into `saes`. */
  sae: z.object({ index: int, feature: int }).nullable().default(null),
  head: int.nullable().default(null),
  /** ban_experts / force_experts: the expert ids. */
  experts: z.array(int).optional(),
  positions: positions.default('all'),
  steps: z.object({ start: int, end: int.nullable() }).nullable().default(null),
});

const view = z.object({
  /** The tab shown (margins, sinks, generation, norms, dose, vectors, activations, …). */
  name: z.string().default('margins'),
  showDifference: z.boolean().default(false),
  showTables: z.boolean().default(false),
  /** Sink threshold ε (Gu et al. 2024). */
  sinkEps: z.number().min(0).max(1).default(0.3),
  /** Heatmap colour scale: 'robust' (98th percentile of |value| over the cells shown, app/lib/color_scale.ts) or 'max' (largest |value|). */
  heatmapScale: z.enum(['robust', 'max']).default('robust'),
  /** Activations view: the hook captured (TransformerLens name). */
  hook: z.string().optional(),
  /** Prompt positions [start, end) selected on the token strip (the activations view shows and saves only those); null: none. (v2) */
  selection: z.object({ start: int, end: int }).refine((x) => x.end > x.start, { message: 'end must be greater than start' }).nullable().default(null),
  sweep: z.object({
    layers: z.string(),
    doses: z.string(),
    site: z.string(),
    type: z.enum(['add', 'add_norm_preserving', 'rotate']),
    vector: int.nullable(),
  }).optional(),
}).default({ name: 'margins', showDifference: false, showTables: false, sinkEps: 0.3, heatmapScale: 'robust', selection: null });

export const experimentSchema = z.object({
  format: z.literal(EXPERIMENT_FORMAT),
  version: z.union(EXPERIMENT_VERSIONS.map((v) => z.literal(v))),
  /** Optional title (poster decks show it). */
  title: z.string().optional(),
  /** Optional one-line note of what to look at. */
  note: z.string().optional(),
  model,
  /** Model B beside `model` (model A), compared with it in the Compare view (v3); absent: none. */
  modelB: model.optional(),
  prompt: z.string(),
  chatTemplate: z.boolean().default(false),
  /** With the chat template: the system prompt before the user turn; absent: none. */
  system: z.string().optional(),
  /** With the chat template: the tools offered; tool-call futures name one of them. */
  tools: z.array(tool).default([]),
  /** With the chat template: the template variable enable_thinking (Qwen3: false renders the empty think block); absent (older files too): not passed, the template's default. */
  enableThinking: z.boolean().optional(),
  good: future,
  bad: future,
  generation: z.object({ maxNewTokens: z.number().int().positive(), temperature: z.number().min(0), topK: int, seed: int })
    .default({ maxNewTokens: 32, temperature: 0, topK: 0, seed: 0 }),
  vectors: z.array(vector).default([]),
  interventions: z.array(intervention).default([]),
  /** SAEs used by feature interventions (v2). */
  saes: z.array(sae).default([]),
  view,
}).superRefine((e, ctx) => {
  for (const which of ['good', 'bad'] as const) {
    if (e[which].mode !== 'tool') continue;
    try {
      const call = toolCallInput(e[which].value);
      const names = e.tools.map((t) => t.function.name);
      if (!names.includes(call.name)) ctx.addIssue({ code: 'custom', path: [which, 'value'], message: `calls "${call.name}", which is not in tools (${names.length ? names.join(', ') : 'none'})` });
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: [which, 'value'], message: (err as Error).message });
    }
  }
  e.interventions.forEach((d, i) => {
    if (d.vector !== null && d.vector >= e.vectors.length) ctx.addIssue({ code: 'custom', path: ['interventions', i, 'vector'], message: `refers to vector ${d.vector} but the file has ${e.vectors.length}` });
    if (d.sae && d.sae.index >= e.saes.length) ctx.addIssue({ code: 'custom', path: ['interventions', i, 'sae'], message: `refers to SAE ${d.sae.index} but the file has ${e.saes.length}` });
  });
});

export type Experiment = z.infer<typeof experimentSchema>;
export type ExperimentModel = Experiment['model'];
export type ExperimentIntervention = Experiment['interventions'][number];
export type ExperimentVector = Experiment['vectors'][number];
export type ExperimentSae = Experiment['saes'][number];

/** A schema path as written in the file: vectors[0].values[3]. */
function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out = typeof p === 'number' ? `${out}[${p}]` : out ? `${out}.${String(p)}` : String(p);
  return out;
}

/**
 * The folder name of a bundled model the experiment names, when this copy ships it.
 * @param shipped the bundled manifest's names (tools/bundled_models.ts; the app's virtual:bundled-models).
 * @throws Error naming the model and the shipped ones otherwise — a name is never used as a path
 *   unless it is one of the manifest's.
 */
export function bundledModelName(name: string, shipped: readonly string[]): string {
  if (!shipped.includes(name)) {
    throw new Error(`the experiment uses the bundled model ${JSON.stringify(name)}, which is not one of the bundled models (${shipped.join(', ') || 'none'}); pass --model`);
  }
  return name;
}

/**
 * Validates parsed JSON as an experiment (defaults filled in).
 * @throws ExperimentError: 'version' for a newer version (saying which), 'invalid' naming each bad field.
 */
export function parseExperiment(json: unknown): Experiment {
  const o = json as { format?: unknown; version?: unknown } | null;
  if (!o || typeof o !== 'object' || o.format !== EXPERIMENT_FORMAT) {
    throw new ExperimentError('invalid', `not a Branchpoint experiment (no "format": "${EXPERIMENT_FORMAT}")`);
  }
  const [lo, hi] = [Math.min(...EXPERIMENT_VERSIONS), Math.max(...EXPERIMENT_VERSIONS)];
  if (typeof o.version !== 'number' || !Number.isInteger(o.version) || o.version < lo) {
    const what = o.version === undefined ? 'is missing' : `is ${JSON.stringify(o.version)}${typeof o.version === 'number' ? '' : ` (a ${o.version === null ? 'null' : Array.isArray(o.version) ? 'list' : typeof o.version})`}`;
    throw new ExperimentError('invalid', `the experiment is not valid: "version" ${what}; a number ${lo}–${hi} is expected`);
  }
  if (o.version > EXPERIMENT_VERSION) {
    throw new ExperimentError('version', `this experiment was saved by a newer Branchpoint (format version ${o.version}; this app reads version ${EXPERIMENT_VERSION}). Open it with a newer copy of the app.`);
  }
  const r = experimentSchema.safeParse(json);
  if (!r.success) {
    const issues = r.error.issues.slice(0, 5).map((i) => `${issuePath(i.path) || '(top)'}: ${i.message}`);
    throw new ExperimentError('invalid', `the experiment is not valid: ${issues.join('; ')}`);
  }
  return r.data;
}

/**
 * Reads an experiment from JSON text.
 * @throws ExperimentError 'corrupt' for text that is not JSON (or is UTF-16), 'invalid' for a key
 *   named twice (refused as the safetensors reader refuses a tensor named twice); else as parseExperiment.
 */
export function readExperiment(text: string): Experiment {
  let json: unknown;
  try {
    assertUtf8Text(text, 'the experiment file');
    json = parseStrictJson(text);
  } catch (e) {
    if (e instanceof DuplicateKeyError) throw new ExperimentError('invalid', `the experiment ${e.message}`);
    throw new ExperimentError('corrupt', e instanceof SyntaxError ? `the experiment is not valid JSON (${e.message})` : (e as Error).message);
  }
  return parseExperiment(json);
}

/** A tool offered to the model, as apply_chat_template's `tools` reads it (the experiment file's `tools` entry). */
export type ToolSpec = z.infer<typeof tool>;

/**
 * A tool list as written (the experiment's `tools`, a study template's, the runner's --tools, the
 * tools editor): an array of {type: "function", function: {name, description?, parameters?}}, each
 * name given once (a tool-call future names its tool). Extra keys are dropped as zod does.
 * @param where what to name in errors ("--tools tools.json", "template: tools").
 * @throws Error naming the entry and field at fault, or the name given twice.
 */
export function toolsInput(v: unknown, where: string): ToolSpec[] {
  if (!Array.isArray(v)) throw new Error(`${where}: expected a JSON array of tools like [{"type": "function", "function": {"name": "read_file", "parameters": {…}}}]`);
  const out: ToolSpec[] = [];
  v.forEach((t, i) => {
    const r = tool.safeParse(t);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw new Error(`${where}: tool ${i + 1}${issue.path.length ? ` ${issue.path.join('.')}` : ''}: ${issue.message}`);
    }
    if (out.some((o) => o.function.name === r.data.function.name)) throw new Error(`${where}: the tool "${r.data.function.name}" is listed twice; a tool call names one tool`);
    out.push(r.data);
  });
  return out;
}

/**
 * A tool-call future's value (JSON {"name": string, "arguments": object}) → the call.
 * @throws Error saying what is wrong (not JSON, no name, arguments not an object).
 */
export function toolCallInput(value: string): { name: string; arguments: Record<string, unknown> } {
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    throw new Error('a tool-call future is JSON {"name": …, "arguments": {…}}; this is not JSON');
  }
  const o = v as { name?: unknown; arguments?: unknown } | null;
  if (!o || typeof o !== 'object' || typeof o.name !== 'string' || !o.name) throw new Error('a tool-call future needs "name": the tool\'s name');
  const args = o.arguments ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new Error(`the tool call "${o.name}": "arguments" must be a JSON object`);
  return { name: o.name, arguments: args as Record<string, unknown> };
}

/** A future as written (text, "|" between alternatives; ids "274 287 | 317"; or a tool call) → the engine's input. @throws Error for a bad id list or tool call. */
export function futureInput(d: { mode: 'text' | 'ids' | 'tool'; value: string }): { text: string } | { ids: number[][] } | { toolCall: { name: string; arguments: Record<string, unknown> } } {
  if (d.mode === 'text') return { text: d.value };
  if (d.mode === 'tool') return { toolCall: toolCallInput(d.value) };
  const seqs = d.value.split('|').map((alt) => alt.split(/[\s,]+/).filter(Boolean));
  const ids = seqs.filter((s) => s.length > 0).map((s) => s.map((tok) => {
    if (!/^\d+$/.test(tok)) throw new Error(`"${tok}" is not a token id (write ids as integers, alternatives separated by "|")`);
    return Number(tok);
  }));
  if (ids.length === 0) throw new Error('a future written as ids needs at least one id');
  return { ids };
}

/** The intervention fields a spec is made from (the UI's draft and the file's entry share them). */
export type InterventionFields = Pick<ExperimentIntervention, 'hook' | 'type' | 'dose' | 'rotateBy' | 'mode' | 'source' | 'head' | 'positions' | 'steps'>;

/** Whether an intervention of this type takes a vector. */
export function needsVector(d: Pick<InterventionFields, 'type' | 'mode'>): boolean {
  return d.type !== 'patch' && d.type !== 'patch_route' && d.type !== 'ban_experts' && d.type !== 'force_experts' && !(d.type === 'ablate' && d.mode === 'zero');
}

/** The spec key the dose sets, or null for types without a dose. */
export function doseKey(d: Pick<InterventionFields, 'type' | 'rotateBy'>): 'alpha' | 'theta' | 't' | null {
  if (d.type === 'add' || d.type === 'add_norm_preserving') return 'alpha';
  return d.type === 'rotate' ? d.rotateBy : null;
}

/**
 * One intervention as the engine's JSON spec (steering/spec.ts), its vector inline.
 * @param perHead whether the hook is per head (attn.hook_q/k/v/z): only then is `head` sent.
 * @throws Error prefixed by `label` when the vector is missing or a patch has no source.
 */
export function interventionSpec(d: InterventionFields & { experts?: number[] | null }, vector: ArrayLike<number> | null, perHead: boolean, label: string): InterventionSpec {
  const spec: InterventionSpec = { hook: d.hook, type: d.type, positions: d.positions };
  if (d.type === 'ban_experts' || d.type === 'force_experts') {
    if (!d.experts || d.experts.length === 0) throw new Error(`${label}: ${d.type} needs the expert ids`);
    spec.experts = [...d.experts];
  }
  const key = doseKey(d);
  if (key) spec[key] = d.dose;
  if (d.type === 'ablate') spec.mode = d.mode;
  if (needsVector(d)) {
    if (!vector) throw new Error(`${label}: pick a vector (build or import one in the Vectors tab)`);
    spec.vector = vector;
  }
  if (d.type === 'patch' || d.type === 'patch_route') {
    if (d.source.trim() === '') throw new Error(`${label}: ${d.type === 'patch' ? 'patch needs a source prompt whose activations are patched in' : 'patch_route needs a source prompt whose chosen experts are patched in'}`);
    spec.source = d.source;
  }
  if (d.head !== null && perHead) spec.head = d.head;
  if (d.steps) spec.steps = d.steps.end === null ? { start: d.steps.start } : { start: d.steps.start, end: d.steps.end };
  return spec;
}

/** A hook whose rows are heads side by side ([pos, head, d_head], hooks.ts), where `head` applies. */
export const isPerHeadHook = (hook: string): boolean => /d_head\]$/.test(hookInfo(hook)?.shape ?? '');

/**
 * The enabled interventions of an experiment as engine specs, in order.
 * @throws Error "intervention #n: …" when a vector is missing (e.g. left out of a link).
 */
export function experimentSpecs(e: Experiment): InterventionSpec[] {
  return e.interventions.flatMap((d, i) => {
    if (!d.enabled) return [];
    const v = d.vector === null ? null : e.vectors[d.vector];
    if (d.sae) {
      const src = e.saes[d.sae.index]?.source;
      const where = src ? (src.kind === 'hub' ? `${src.repo}/${src.path}` : src.kind === 'url' ? src.url : `the local folder "${src.name}"`) : 'an SAE';
      throw new Error(`intervention #${i + 1}: ${d.type === 'sae_clamp' ? 'clamps' : 'steers along'} feature ${d.sae.feature} of the SAE at ${where}; the runner does not load SAEs from an experiment file (disable it, or use "branchpoint sae --sae FOLDER")`);
    }
    if (v && v.values === null) throw new Error(`intervention #${i + 1}: its vector "${v.name}" is not in this experiment (left out of the link); open the experiment file instead`);
    return [interventionSpec(d, v?.values ?? null, isPerHeadHook(d.hook), `intervention #${i + 1}`)];
  });
}

/** A poster deck (public/experiments/deck.json): a title and prepared experiments in order. */
export interface Deck {
  format: 'branchpoint-deck';
  title: string;
  experiments: Experiment[];
}

/**
 * Validates a poster deck.
 * @throws ExperimentError naming the experiment (1-based) that is not valid, or 'invalid' for a file that is not a deck.
 */
export function parseDeck(json: unknown): Deck {
  const o = json as { format?: unknown; title?: unknown; experiments?: unknown } | null;
  if (!o || o.format !== 'branchpoint-deck' || !Array.isArray(o.experiments)) throw new ExperimentError('invalid', 'not a Branchpoint poster deck (no "format": "branchpoint-deck" with "experiments")');
  const experiments = o.experiments.map((e, i) => {
    try {
      return parseExperiment(e);
    } catch (err) {
      const x = err as ExperimentError;
      throw new ExperimentError(x.kind, `deck experiment ${i + 1}: ${x.message}`);
    }
  });
  return { format: 'branchpoint-deck', title: typeof o.title === 'string' ? o.title : 'Branchpoint', experiments };
}
