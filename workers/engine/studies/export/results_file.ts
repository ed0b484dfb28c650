/**
 * The results file (docs/results-format.md): what one experiment's analyses gave — logit-lens
 * margins, the activation-patching grid, the dose–response sweep, the intervention window — with
 * the model and where it ran, as versioned JSON. The runner writes it (`branchpoint results`), the
 * nnsight script writes it (nnsight_script.ts), and the app opens it read-only (Open results…).
 * Keys are the runner's own (snake_case, nested arrays: `branchpoint margins`/`patch`/`sweep`/`window`).
 */
import { z } from 'zod';
import { parseExperiment, ExperimentError, type Experiment } from '../../experiment';
import { assertUtf8Text, DuplicateKeyError, parseStrictJson } from '../../io/strict_json';

/** The format tag every results file carries. */
export const RESULTS_FORMAT = 'branchpoint-results';
/** The version this code reads and writes. */
export const RESULTS_VERSION = 1;
/** Where the numbers were computed. */
export const WHERE_RAN = ['nnsight local', 'NDIF remote', 'branchpoint runner', 'browser'] as const;
export type WhereRan = (typeof WHERE_RAN)[number];

const finite = z.number().refine(Number.isFinite, 'must be a finite number');
const int = z.number().int().nonnegative();
const grid = z.array(z.array(finite));

const lens = z.object({
  ids: z.array(int),
  tokens: z.array(z.string()),
  /** Δ^l_t [n_layers+1][n_tokens]: row 0 the embeddings, row l the residual after block l−1 (nats). */
  lens_margin: grid.min(2),
  /** Δ_t at the final layer [n_tokens] (nats). */
  final_margin: z.array(finite),
}).superRefine((s, ctx) => {
  const T = s.ids.length;
  if (s.tokens.length !== T) ctx.addIssue({ code: 'custom', path: ['tokens'], message: `has ${s.tokens.length} entries for ${T} ids` });
  s.lens_margin.forEach((r, i) => { if (r.length !== T) ctx.addIssue({ code: 'custom', path: ['lens_margin', i], message: `has ${r.length} entries for ${T} tokens` }); });
  if (s.final_margin.length !== T) ctx.addIssue({ code: 'custom', path: ['final_margin'], message: `has ${s.final_margin.length} entries for ${T} tokens` });
});

const patch = z.object({
  /** The hook patched, `{l}` for the layer: blocks.{l}.hook_resid_pre or blocks.{l}.hook_resid_post. */
  hook: z.string().regex(/^blocks\.\{l\}\.hook_resid_(pre|post)$/, 'must be blocks.{l}.hook_resid_pre or blocks.{l}.hook_resid_post'),
  direction: z.enum(['denoise', 'noise']),
  metric: z.literal('final'),
  clean: z.string(),
  corrupt: z.string(),
  clean_tokens: z.array(z.string()).min(1),
  clean_margin: finite,
  corrupt_margin: finite,
  /** r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt) [n_layers][n_tokens]; null where Δ_clean = Δ_corrupt. */
  recovery: z.array(z.array(finite.nullable())).min(1),
}).superRefine((s, ctx) => {
  s.recovery.forEach((r, i) => { if (r.length !== s.clean_tokens.length) ctx.addIssue({ code: 'custom', path: ['recovery', i], message: `has ${r.length} entries for ${s.clean_tokens.length} tokens` }); });
});

const sweep = z.object({
  layers: z.array(int).min(1),
  doses: z.array(finite).min(1),
  hooks: z.array(z.string()),
  /** Δ at the last prompt position [layer][dose] (nats). */
  margin: grid,
  unsteered_margin: finite,
}).superRefine((s, ctx) => {
  if (s.hooks.length !== s.layers.length) ctx.addIssue({ code: 'custom', path: ['hooks'], message: `has ${s.hooks.length} entries for ${s.layers.length} layers` });
  if (s.margin.length !== s.layers.length) ctx.addIssue({ code: 'custom', path: ['margin'], message: `has ${s.margin.length} rows for ${s.layers.length} layers` });
  s.margin.forEach((r, i) => { if (r.length !== s.doses.length) ctx.addIssue({ code: 'custom', path: ['margin', i], message: `has ${r.length} entries for ${s.doses.length} doses` }); });
});

const window = z.object({
  max_new_tokens: z.number().int().positive(),
  /** Start steps k = 0..K. */
  ks: z.array(int).min(1),
  /** Mean margin over the N steps of the continuation steered from step k [K+1] (nats). */
  outcome: z.array(finite),
  unsteered_outcome: finite,
  point_of_no_return: int.nullable(),
}).superRefine((s, ctx) => {
  if (s.outcome.length !== s.ks.length) ctx.addIssue({ code: 'custom', path: ['outcome'], message: `has ${s.outcome.length} entries for ${s.ks.length} start steps` });
  if (s.point_of_no_return !== null && !s.ks.includes(s.point_of_no_return)) ctx.addIssue({ code: 'custom', path: ['point_of_no_return'], message: `is ${s.point_of_no_return}, not one of the start steps` });
});

const resultsSchema = z.object({
  format: z.literal(RESULTS_FORMAT),
  version: z.literal(RESULTS_VERSION),
  /** The model as it was named where it ran (a Hub id, a folder name). */
  model: z.string().min(1),
  where_ran: z.enum(WHERE_RAN),
  /** What computed it, e.g. "nnsight 0.7.0" or "branchpoint runner". */
  produced_by: z.string().default(''),
  experiment: z.unknown(),
  lens: lens.optional(),
  patch: patch.optional(),
  sweep: sweep.optional(),
  window: window.optional(),
}).strict();

export type ResultsFile = Omit<z.infer<typeof resultsSchema>, 'experiment'> & { experiment: Experiment };
export type LensSection = z.infer<typeof lens>;
export type PatchSection = z.infer<typeof patch>;
export type SweepSection = z.infer<typeof sweep>;
export type WindowSection = z.infer<typeof window>;

/** Why a results file was refused: what is wrong and where. */
export class ResultsError extends Error {
  override name = 'ResultsError';
}

const at = (path: readonly PropertyKey[]): string => path.reduce<string>((s, p) => (typeof p === 'number' ? `${s}[${p}]` : s ? `${s}.${String(p)}` : String(p)), '');

/**
 * Validates parsed JSON as a results file: every section's fields, their shapes against each
 * other (rows × tokens, layers × doses), finite numbers, and the experiment it came from.
 * @throws ResultsError naming the field and why (up to five), or the experiment's own message.
 */
export function parseResults(json: unknown): ResultsFile {
  const o = json as { format?: unknown; version?: unknown } | null;
  if (!o || typeof o !== 'object' || Array.isArray(o) || o.format !== RESULTS_FORMAT) throw new ResultsError(`not a Branchpoint results file (no "format": "${RESULTS_FORMAT}")`);
  if (o.version !== RESULTS_VERSION) throw new ResultsError(`the results file has "version" ${JSON.stringify(o.version)}; this app reads version ${RESULTS_VERSION}`);
  const r = resultsSchema.safeParse(json);
  if (!r.success) throw new ResultsError(`the results file is not valid: ${r.error.issues.slice(0, 5).map((i) => `${at(i.path) || '(top)'}: ${i.message}`).join('; ')}`);
  if (!r.data.lens && !r.data.patch && !r.data.sweep && !r.data.window) throw new ResultsError('the results file has no section (lens, patch, sweep or window): nothing to show');
  let experiment: Experiment;
  try {
    experiment = parseExperiment(r.data.experiment);
  } catch (e) {
    throw new ResultsError(`the results file's "experiment": ${(e as ExperimentError).message}`);
  }
  return { ...r.data, experiment };
}

/**
 * Reads a results file from JSON text.
 * @throws ResultsError for text that is not UTF-8 JSON, a key named twice, or as parseResults.
 */
export function readResults(text: string): ResultsFile {
  let json: unknown;
  try {
    assertUtf8Text(text, 'the results file');
    json = parseStrictJson(text);
  } catch (e) {
    if (e instanceof DuplicateKeyError) throw new ResultsError(`the results file ${e.message}`);
    throw new ResultsError(e instanceof SyntaxError ? `the results file is not valid JSON (${e.message})` : (e as Error).message);
  }
  return parseResults(json);
}
