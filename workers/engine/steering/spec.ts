/**
 * Intervention specs: the stable JSON that the command-line runner (`--intervention JSON`) and the
 * UI both write, and its translation into the engine's `Intervention` (a RowOp at one hook).
 * DESIGN.md §2 "Interventions".
 *
 * Keys (all others are rejected, so a typo cannot pass silently):
 * - hook: hook name, e.g. "blocks.3.hook_resid_post" (any steerable hook of hooks.ts).
 * - type: 'add' | 'add_norm_preserving' | 'rotate' | 'ablate' | 'patch' | 'sae_clamp', or a route
 *   intervention of a mixture-of-experts model (model/moe.ts): 'ban_experts' at
 *   blocks.{l}.mlp.hook_router_logits (the experts' router logits set to −∞ before the softmax, so
 *   the top-k is taken among the others), 'force_experts' at blocks.{l}.mlp.hook_expert_indices (these
 *   k experts are used, weighted by the router's p at them, renormalised where the model does),
 *   'set_expert_weights' at blocks.{l}.mlp.hook_expert_weights (vector: the k weights, used as given),
 *   'patch_route' at blocks.{l}.mlp.hook_expert_indices (routing patching: another run's chosen experts
 *   — `source`, a prompt of the same token length, or `vector`, rows [positions][k] of expert ids —
 *   imposed on this run at the selected positions; as with force_experts their weights are this run's
 *   router p at them, renormalised where the model does, so patching a run's own routing into
 *   itself changes nothing).
 * - experts (ban_experts: any number, leaving at least k; force_experts: exactly k, distinct): expert ids.
 * - vector: the direction/values, inline (number[]), or — runner only — a path to a .npy,
 *   .safetensors or .json file (see vector_io.ts). patch: rows [positions][width] of another run.
 *   Or an SAE feature's decoder direction {"sae": REF, "feature": F}: W_dec[F] scaled to unit L2 norm.
 * - sae, feature, value (sae_clamp): clamp feature F of the SAE at REF (a path for the runner, the
 *   loaded SAE's id in the app) to c, keeping the SAE's error term: x' = x + (c − f_F(x))·W_dec[F]
 *   (the hook must be the SAE's hook_name).
 * - alpha (add, add_norm_preserving): the dose α in h += α·v.
 * - theta (rotate, radians) or t (rotate, fraction of the angle between h and v; 1 = reach v̂).
 * - mode (ablate): 'zero' (h ← 0), 'mean' (h ← vector, a mean activation), 'project' (h ← h − (h·v̂)v̂).
 * - source (patch, instead of vector): a prompt whose activations at `hook` are patched in, encoded
 *   in the run's chat turn (RunShape: chat template, system prompt, tools, enable_thinking, forcedIds).
 * - head (hooks [pos, heads·d_head]: attn.hook_q/k/v/z): act on this head only; vector has d_head
 *   values (patch rows keep the hook's full width; only the head's columns are replaced).
 * - positions: 'all' (default) | 'prompt' | 'generated' | [indices] | {start, end} (end exclusive).
 * - steps: {start, end?}: generation steps [start, end) (0 = the prompt pass); default: every step.
 *
 * Definitions: add = activation addition (Turner et al., arXiv 2308.10248; Rimsky et al., CAA,
 * arXiv 2312.06681); rotate = angular steering (Vu & Nguyen, arXiv 2510.26243; You et al.,
 * arXiv 2602.08169); project = directional ablation; patch = activation patching (Heimersheim &
 * Nanda, arXiv 2404.15255).
 */
import type { ModelSpec } from '../arch/spec';
import type { Intervention, PositionSelector } from '../model/intervention';
import { hookWidth, type HookWidth } from '../model/hook_width';
import type { Sae } from '../sae/sae';

export const INTERVENTION_TYPES = ['add', 'add_norm_preserving', 'rotate', 'ablate', 'patch', 'sae_clamp', 'ban_experts', 'force_experts', 'set_expert_weights', 'patch_route'] as const;
/** The route interventions (mixture-of-experts models) and the router hook each acts at. */
export const ROUTE_TYPES = { ban_experts: 'mlp.hook_router_logits', force_experts: 'mlp.hook_expert_indices', set_expert_weights: 'mlp.hook_expert_weights', patch_route: 'mlp.hook_expert_indices' } as const;
export type InterventionType = (typeof INTERVENTION_TYPES)[number];
export const ABLATE_MODES = ['zero', 'mean', 'project'] as const;
export type AblateMode = (typeof ABLATE_MODES)[number];

/** A validated intervention spec (see the module docstring for each key). */
export interface InterventionSpec {
  hook: string;
  type: InterventionType;
  /** Inline values [width] (or [d_head] with head); patch: rows [positions][width]; a file path (runner); or an SAE feature's unit decoder row. */
  vector?: ArrayLike<number> | number[][] | string | SaeFeatureRef;
  alpha?: number;
  /** Radians. */
  theta?: number;
  t?: number;
  mode?: AblateMode;
  /** patch: the prompt of the run whose activations are patched in. */
  source?: string;
  head?: number;
  positions?: PositionSelector;
  /** Generation steps [start, end); end omitted = to the end of generation. */
  steps?: { start: number; end?: number };
  /** sae_clamp: the SAE (runner: its path; app: the loaded SAE's id). */
  sae?: string;
  /** sae_clamp: the feature index. */
  feature?: number;
  /** sae_clamp: the value c the feature is clamped to. */
  value?: number;
  /** ban_experts / force_experts: expert ids. */
  experts?: number[];
}

/** An SAE feature as a vector: W_dec[feature] / ‖W_dec[feature]‖. */
export interface SaeFeatureRef { sae: string; feature: number }

/** True when a spec's vector names an SAE feature rather than holding values. */
export function isSaeFeatureRef(v: unknown): v is SaeFeatureRef {
  return isObj(v) && typeof v.sae === 'string' && isInt(v.feature);
}

/** Every key a spec may have, in the order the usage text lists them. */
export const SPEC_KEYS = ['hook', 'type', 'vector', 'alpha', 'theta', 't', 'mode', 'source', 'head', 'positions', 'steps', 'sae', 'feature', 'value', 'experts'] as const;

/** The run an intervention is checked against. */
export interface RunShape {
  /** Prompt length in tokens. */
  nPrompt: number;
  /** Generation length (max_new_tokens); absent for a prompt-only analysis. */
  maxNewTokens?: number;
  /**
   * The run's chat turn (PromptInput's fields of the same names, workers/engine/prompt.ts): the prompt
   * goes through the chat template, with this system prompt, these tools and this enable_thinking. A
   * patch source prompt is encoded in the same turn, so its positions are the run's positions.
   */
  chatTemplate?: boolean;
  system?: string;
  tools?: Record<string, unknown>[];
  enableThinking?: boolean;
  /** Token ids teacher-forced after the prompt (PromptInput.forcedIds: the decision point's shared prefix), counted in nPrompt; a patch source prompt gets them too. */
  forcedIds?: readonly number[];
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isInt = (x: unknown): x is number => Number.isSafeInteger(x);

/**
 * Structural validation of one spec as parsed from JSON (or built by the UI). Model-dependent
 * checks (hook exists, vector width, positions in range) happen in `toIntervention`.
 * @param label prefix of every error message, e.g. "--intervention 2".
 * @throws Error naming the key at fault and what it should be.
 */
export function parseSpec(json: unknown, label = 'intervention'): InterventionSpec {
  const fail = (msg: string): never => { throw new Error(`${label}: ${msg}`); };
  if (!isObj(json)) fail(`must be a JSON object like {"hook":"blocks.1.hook_resid_post","type":"add","vector":[...],"alpha":4}`);
  const o = json as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!(SPEC_KEYS as readonly string[]).includes(k)) fail(`unknown key "${k}" (keys: ${SPEC_KEYS.join(', ')})`);
  if (typeof o.hook !== 'string' || o.hook === '') fail('"hook" is required: a hook name such as "blocks.1.hook_resid_post"');
  if (!(INTERVENTION_TYPES as readonly unknown[]).includes(o.type)) fail(`"type" must be one of ${INTERVENTION_TYPES.join(', ')} (got ${JSON.stringify(o.type)})`);
  const type = o.type as InterventionType;
  for (const k of ['alpha', 'theta', 't', 'value'] as const) {
    if (o[k] !== undefined && (typeof o[k] !== 'number' || !Number.isFinite(o[k]))) fail(`"${k}" must be a finite number (got ${typeof o[k] === 'number' ? String(o[k]) : JSON.stringify(o[k])})`);
  }
  const has = (k: string) => o[k] !== undefined;
  const forbid = (keys: string[], why: string) => { for (const k of keys) if (has(k)) fail(`"${k}" does not apply: ${why}`); };
  switch (type) {
    case 'add':
    case 'add_norm_preserving':
      if (!has('alpha')) fail(`${type} needs "alpha", the dose in h += alpha·v`);
      forbid(['theta', 't', 'mode', 'source'], `${type} takes alpha`);
      break;
    case 'rotate':
      if (has('theta') === has('t')) fail('rotate needs exactly one of "theta" (radians) or "t" (fraction of the angle between h and v; 1 reaches v)');
      forbid(['alpha', 'mode', 'source'], 'rotate takes theta or t');
      break;
    case 'ablate':
      if (!(ABLATE_MODES as readonly unknown[]).includes(o.mode)) fail(`ablate needs "mode": ${ABLATE_MODES.join(', ')} (got ${JSON.stringify(o.mode)})`);
      if (o.mode === 'zero' && has('vector')) fail('ablate mode "zero" takes no vector (it sets h to 0)');
      if (o.mode !== 'zero' && !has('vector')) fail(`ablate mode "${String(o.mode)}" needs "vector" (${o.mode === 'mean' ? 'the mean activation' : 'the direction to project out'})`);
      forbid(['alpha', 'theta', 't', 'source'], 'ablate takes mode (and vector)');
      break;
    case 'sae_clamp':
      if (typeof o.sae !== 'string' || o.sae === '') fail('sae_clamp needs "sae": the SAE (a folder or file path, or a loaded SAE\'s id)');
      if (!isInt(o.feature) || (o.feature as number) < 0) fail(`sae_clamp needs "feature": a non-negative integer (got ${JSON.stringify(o.feature)})`);
      if (!has('value')) fail('sae_clamp needs "value": the activation c the feature is clamped to');
      forbid(['vector', 'alpha', 'theta', 't', 'mode', 'source', 'head'], 'sae_clamp takes sae, feature and value');
      break;
    case 'ban_experts':
    case 'force_experts':
      if (!Array.isArray(o.experts) || o.experts.length === 0 || o.experts.some((e) => !isInt(e) || (e as number) < 0)) fail(`${type} needs "experts": a non-empty list of expert ids (non-negative integers) (got ${JSON.stringify(o.experts)})`);
      if (new Set(o.experts as number[]).size !== (o.experts as number[]).length) fail(`"experts" lists an expert twice: ${JSON.stringify(o.experts)}`);
      forbid(['vector', 'alpha', 'theta', 't', 'mode', 'source', 'head'], `${type} takes experts`);
      break;
    case 'set_expert_weights':
      forbid(['alpha', 'theta', 't', 'mode', 'source', 'head', 'experts'], 'set_expert_weights takes vector: the k routing weights');
      break;
    case 'patch_route':
      if (has('vector') === has('source')) fail('patch_route needs exactly one of "source" (a prompt whose chosen experts are patched in) or "vector" (rows [positions][k] of expert ids)');
      if (has('source') && typeof o.source !== 'string') fail('"source" must be a prompt string');
      forbid(['alpha', 'theta', 't', 'mode', 'head'], 'patch_route imposes the source\'s chosen experts');
      break;
    case 'patch':
      if (has('vector') === has('source')) fail('patch needs exactly one of "source" (a prompt whose activations are patched in) or "vector" (rows [positions][width])');
      if (has('source') && typeof o.source !== 'string') fail('"source" must be a prompt string');
      forbid(['alpha', 'theta', 't', 'mode'], 'patch replaces h with the source values');
      break;
  }
  if (type !== 'sae_clamp') forbid(['sae', 'feature', 'value'], 'only sae_clamp takes sae, feature and value (an SAE feature as a vector is "vector": {"sae": PATH, "feature": F})');
  if (type !== 'ban_experts' && type !== 'force_experts') forbid(['experts'], 'only ban_experts and force_experts take experts');
  if (type !== 'ablate' && type !== 'patch' && type !== 'patch_route' && type !== 'sae_clamp' && type !== 'ban_experts' && type !== 'force_experts' && !has('vector')) fail(`${type} needs "vector": inline numbers${label.startsWith('--') ? ' or a .npy/.safetensors/.json file path' : ''}`);
  if (has('vector') && isObj(o.vector) && !isArrayLike(o.vector) && !isSaeFeatureRef(o.vector)) fail(`"vector" as an object must be {"sae": PATH, "feature": F} with F a non-negative integer (got ${JSON.stringify(o.vector)})`);
  if (isSaeFeatureRef(o.vector) && (o.vector.feature < 0 || type === 'patch' || type === 'patch_route')) fail(type === 'patch' || type === 'patch_route' ? 'patch takes rows, not an SAE feature' : `"vector".feature must be non-negative (got ${o.vector.feature})`);
  if (has('vector') && typeof o.vector !== 'string' && !isArrayLike(o.vector) && !isSaeFeatureRef(o.vector)) fail('"vector" must be an array of numbers, a file path, or {"sae": PATH, "feature": F}');
  if (has('head') && (!isInt(o.head) || (o.head as number) < 0)) fail(`"head" must be a non-negative integer (got ${JSON.stringify(o.head)})`);
  const positions = o.positions === undefined ? undefined : parsePositions(o.positions, fail);
  let steps: InterventionSpec['steps'];
  if (has('steps')) {
    const s = o.steps;
    if (!isObj(s) || !isInt(s.start) || s.start < 0 || (s.end !== undefined && !isInt(s.end))) fail(`"steps" must be {"start": k, "end": m} with integers 0 ≤ k < m (end optional) (got ${JSON.stringify(s)})`);
    const w = s as { start: number; end?: number };
    if (w.end !== undefined && w.end <= w.start) fail(`"steps" window [${w.start}, ${w.end}) is empty: end must be greater than start`);
    steps = w.end === undefined ? { start: w.start } : { start: w.start, end: w.end };
  }
  return {
    hook: o.hook as string, type,
    ...(has('vector') ? { vector: o.vector as InterventionSpec['vector'] } : {}),
    ...(has('alpha') ? { alpha: o.alpha as number } : {}),
    ...(has('theta') ? { theta: o.theta as number } : {}),
    ...(has('t') ? { t: o.t as number } : {}),
    ...(has('mode') ? { mode: o.mode as AblateMode } : {}),
    ...(has('source') ? { source: o.source as string } : {}),
    ...(has('head') ? { head: o.head as number } : {}),
    ...(positions !== undefined ? { positions } : {}),
    ...(steps ? { steps } : {}),
    ...(type === 'sae_clamp' ? { sae: o.sae as string, feature: o.feature as number, value: o.value as number } : {}),
    ...(has('experts') ? { experts: [...(o.experts as number[])] } : {}),
  };
}

function isArrayLike(x: unknown): x is ArrayLike<unknown> {
  return Array.isArray(x) || ArrayBuffer.isView(x);
}

function parsePositions(p: unknown, fail: (m: string) => never): PositionSelector {
  if (p === 'all' || p === 'prompt' || p === 'generated') return p;
  if (Array.isArray(p)) {
    const bad = p.findIndex((x) => !isInt(x) || x < 0);
    if (bad >= 0) fail(`"positions"[${bad}] must be a non-negative integer (got ${JSON.stringify(p[bad])})`);
    return p as number[];
  }
  if (isObj(p) && isInt(p.start) && isInt(p.end) && p.start >= 0) {
    if (p.end <= p.start) fail(`"positions" range [${p.start}, ${p.end}) is empty: end must be greater than start`);
    return { start: p.start, end: p.end };
  }
  return fail(`"positions" must be "all", "prompt", "generated", a list of indices or {"start": i, "end": j} (got ${JSON.stringify(p)})`);
}

/**
 * Checks that every value is a finite number.
 * @param what how the message names the array, e.g. "vector" or "vector.npy".
 * @throws Error naming the first bad index and its value.
 */
export function assertFinite(v: ArrayLike<unknown>, what: string): void {
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x !== 'number') throw new Error(`${what}[${i}] is ${JSON.stringify(x)}, not a number${x === null ? ' (NaN or Infinity written as JSON null?)' : ''}`);
    if (!Number.isFinite(x)) throw new Error(`${what}[${i}] is ${x}: steering vectors must be finite`);
  }
}

/**
 * Translates a validated spec into the engine's Intervention for one model and run.
 * @param model the model's spec (hook names and widths).
 * @param run prompt length and generation length, for the position and step checks.
 * @param label prefix of error messages.
 * @throws Error for an unknown or non-steerable hook (assertHook's message), a vector path that
 *   was not loaded (resolve it with resolve.ts), a vector of the wrong width (expected vs got and
 *   the hook's width), NaN/Infinity values (with the index), a head out of range, positions
 *   outside the run, a step window that starts at or after max_new_tokens, patch rows that do
 *   not cover the steered positions, or an all-zero vector for rotate / ablate "project" (no
 *   direction); an SAE reference `saeOf` cannot resolve, a feature outside the SAE, or an
 *   sae_clamp at a hook other than the SAE's.
 * @param saeOf the loaded SAE a spec's "sae" (or vector {"sae"}) names (resolve.ts loads them).
 */
export function toIntervention(spec: InterventionSpec, model: ModelSpec, run: RunShape, label = 'intervention', saeOf?: (ref: string) => Sae): Intervention {
  const fail = (msg: string): never => { throw new Error(`${label}: ${msg}`); };
  let hw: HookWidth;
  try {
    hw = hookWidth(model, spec.hook);
  } catch (e) {
    return fail((e as Error).message);
  }
  const sae = (ref: string): Sae => {
    if (!saeOf) return fail(`SAE "${ref}" is not loaded (resolve.ts loads the SAEs a spec names)`);
    try {
      return saeOf(ref);
    } catch (e) {
      return fail((e as Error).message);
    }
  };
  if (isSaeFeatureRef(spec.vector)) {
    const s = sae(spec.vector.sae);
    try { s.assertFeature(spec.vector.feature); } catch (e) { fail((e as Error).message); }
    spec = { ...spec, vector: s.decoderRow(spec.vector.feature, true) };
  }
  if (typeof spec.vector === 'string') fail(`vector "${spec.vector}" is a file path; only the command-line runner reads vector files (pass the values inline)`);
  let groups: Intervention['groups'];
  let len = hw.width;
  let widthText = `${spec.hook} is [pos, ${hw.symbol}] = ${hw.width} wide`;
  if (spec.head !== undefined) {
    if (hw.heads === undefined) return fail(`"head" applies to per-head hooks (attn.hook_q/k/v/z); ${spec.hook} is [pos, ${hw.symbol}]`);
    if (spec.head >= hw.heads) fail(`head ${spec.head} does not exist: ${spec.hook} has heads 0..${hw.heads - 1}`);
    groups = { size: model.dHead, indices: [spec.head] };
    if (spec.type !== 'patch') { len = model.dHead; widthText = `head ${spec.head} of ${spec.hook} takes d_head = ${model.dHead} values`; }
  }

  const maxPos = run.maxNewTokens === undefined ? run.nPrompt : run.nPrompt + Math.max(run.maxNewTokens - 1, 0);
  const runText = run.maxNewTokens === undefined
    ? `the prompt has ${run.nPrompt} tokens (positions 0..${run.nPrompt - 1})`
    : `the prompt has ${run.nPrompt} tokens and generation feeds back ${Math.max(run.maxNewTokens - 1, 0)} more (positions 0..${maxPos - 1})`;
  const positions = spec.positions ?? 'all';
  if (Array.isArray(positions)) {
    for (const p of positions) if (p >= maxPos) fail(`position ${p} is outside the run: ${runText}`);
  } else if (typeof positions === 'object' && positions.start >= maxPos) {
    fail(`positions [${positions.start}, ${positions.end}) start outside the run: ${runText}`);
  }
  if (spec.steps && run.maxNewTokens !== undefined && spec.steps.start >= run.maxNewTokens) {
    fail(`step window starts at step ${spec.steps.start}, but generation runs steps 0..${run.maxNewTokens - 1} (max_new_tokens = ${run.maxNewTokens}): the intervention would never act`);
  }

  let op: Intervention['op'];
  if (spec.type in ROUTE_TYPES) {
    const route = routeOp(spec, model, fail, lastPosition(positions, run.nPrompt, maxPos));
    return {
      hook: spec.hook, op: route.op, positions,
      ...(spec.steps ? { steps: { start: spec.steps.start, end: spec.steps.end ?? Number.POSITIVE_INFINITY } } : {}),
      ...(route.groups ? { groups: route.groups } : {}),
    };
  }
  if (spec.type === 'sae_clamp') {
    const s = sae(spec.sae!);
    if (s.cfg.hookName !== spec.hook) fail(`sae_clamp at ${spec.hook}, but ${s.label} reads ${s.cfg.hookName}; clamp at its hook`);
    try { s.assertFeature(spec.feature!); } catch (e) { fail((e as Error).message); }
    op = { kind: 'sae_clamp', sae: s, feature: spec.feature!, value: spec.value! };
  } else if (spec.type === 'patch') {
    const rows = spec.vector as number[][] | undefined;
    if (!rows) return fail('patch source not resolved: run the source prompt first (resolve.ts) or pass rows in "vector"');
    rows.forEach((r, i) => {
      if (!isArrayLike(r)) fail(`patch vector[${i}] must be a row of ${hw.width} numbers`);
      if (r.length !== hw.width) fail(`patch vector[${i}] has ${r.length} values, but ${spec.hook} is [pos, ${hw.symbol}] = ${hw.width} wide`);
      assertFinite(r, `patch vector[${i}]`);
    });
    const last = lastPosition(positions, run.nPrompt, maxPos);
    if (last >= rows.length) fail(`patch source has ${rows.length} positions, but the intervention reaches position ${last}; restrict "positions" to {"start": 0, "end": ${rows.length}} or use a longer source`);
    const replacement = new Float32Array(rows.length * hw.width);
    rows.forEach((r, i) => replacement.set(r, i * hw.width));
    op = { kind: 'patch', replacement };
  } else if (spec.type === 'ablate' && spec.mode === 'zero') {
    op = { kind: 'set', v: new Float32Array(len) };
  } else {
    const raw = spec.vector as ArrayLike<number>;
    if (raw.length !== len) fail(`vector has ${raw.length} values, but ${widthText} (expected ${len}, got ${raw.length})`);
    assertFinite(raw, 'vector');
    const v = Float32Array.from(raw);
    // rotate and project act along v̂: a zero vector has no direction, and would be a silent no-op
    if ((spec.type === 'rotate' || (spec.type === 'ablate' && spec.mode === 'project')) && v.every((x) => x === 0)) {
      fail(`${spec.type === 'rotate' ? 'rotate' : 'ablate mode "project"'} needs a direction, but the vector is all zeros (${len} values); build or import a non-zero vector`);
    }
    switch (spec.type) {
      case 'add': op = { kind: 'add', v, alpha: spec.alpha! }; break;
      case 'add_norm_preserving': op = { kind: 'add_norm_preserving', v, alpha: spec.alpha! }; break;
      case 'rotate': op = spec.theta !== undefined ? { kind: 'rotate', v, theta: spec.theta } : { kind: 'rotate', v, t: spec.t! }; break;
      default: op = spec.mode === 'mean' ? { kind: 'set', v } : { kind: 'project_out', v };
    }
  }
  return {
    hook: spec.hook, op, positions,
    ...(spec.steps ? { steps: { start: spec.steps.start, end: spec.steps.end ?? Number.POSITIVE_INFINITY } } : {}),
    ...(groups ? { groups } : {}),
  };
}

/** The largest position a selector can touch in a run whose positions are 0..maxPos−1. */
function lastPosition(sel: PositionSelector, nPrompt: number, maxPos: number): number {
  if (Array.isArray(sel)) return Math.max(-1, ...sel);
  if (typeof sel === 'object') return Math.min(sel.end, maxPos) - 1;
  return sel === 'prompt' ? nPrompt - 1 : maxPos - 1;
}

/**
 * A route intervention's row op (see the module docstring): ban = set the banned experts' router
 * logits to −∞ (column groups of width 1); force = set the expert ids; set_expert_weights = set the
 * k weights; patch_route = replace the expert ids by the source's rows (a patch op).
 * @param last the largest position the intervention can touch (patch_route's rows must reach it).
 * @throws Error (via fail) when the hook is not the type's router hook, the model has no experts
 *   there, an expert does not exist, a ban leaves fewer than k experts, a force / weight list is
 *   not k long, or patch_route rows are not k distinct expert ids each or do not reach `last`.
 */
function routeOp(spec: InterventionSpec, model: ModelSpec, fail: (msg: string) => never, last: number): { op: Intervention['op']; groups?: Intervention['groups'] } {
  const site = ROUTE_TYPES[spec.type as keyof typeof ROUTE_TYPES];
  if (!model.moe) fail(`${spec.type} acts on a mixture-of-experts router; ${model.modelType} models have none`);
  const moe = model.moe!;
  if (!new RegExp(`^blocks\\.\\d+\\.${site.replace('.', '\\.')}$`).test(spec.hook)) fail(`${spec.type} acts at blocks.{l}.${site} (got ${spec.hook})`);
  const experts = spec.experts ?? [];
  for (const e of experts) if (e >= moe.nExperts) fail(`expert ${e} does not exist: the model has experts 0..${moe.nExperts - 1}`);
  if (spec.type === 'ban_experts') {
    if (experts.length > moe.nExperts - moe.topK) fail(`banning ${experts.length} of ${moe.nExperts} experts leaves fewer than the ${moe.topK} each token uses`);
    return { op: { kind: 'set', v: new Float32Array(1).fill(Number.NEGATIVE_INFINITY) }, groups: { size: 1, indices: [...experts] } };
  }
  if (spec.type === 'force_experts') {
    if (experts.length !== moe.topK) fail(`force_experts needs exactly ${moe.topK} experts (num_experts_per_tok), got ${experts.length}`);
    return { op: { kind: 'set', v: Float32Array.from(experts) } };
  }
  if (spec.type === 'patch_route') return { op: { kind: 'patch', replacement: routeRows(spec.vector, moe, last, fail) } };
  const raw = spec.vector;
  if (!isArrayLike(raw)) return fail(`set_expert_weights needs "vector": the ${moe.topK} routing weights inline`);
  if (raw.length !== moe.topK) fail(`set_expert_weights needs ${moe.topK} weights (num_experts_per_tok), got ${raw.length}`);
  assertFinite(raw as ArrayLike<number>, 'vector');
  return { op: { kind: 'set', v: Float32Array.from(raw as ArrayLike<number>) } };
}

/**
 * patch_route's rows [positions][k] of expert ids, flattened to the hook's [pos·k] float32 layout.
 * @throws Error (via fail) for a source not yet run (resolve.ts runs it), a row that is not k
 *   distinct whole ids in [0, n_experts), or fewer rows than the intervention reaches (last + 1).
 */
function routeRows(v: InterventionSpec['vector'], moe: NonNullable<ModelSpec['moe']>, last: number, fail: (msg: string) => never): Float32Array {
  if (!Array.isArray(v)) return fail('patch_route source not resolved: run the source prompt first (resolve.ts) or pass rows [positions][k] of expert ids in "vector"');
  const rows = v as unknown[];
  const k = moe.topK, out = new Float32Array(rows.length * k);
  rows.forEach((r, i) => {
    if (!isArrayLike(r) || r.length !== k) fail(`patch_route vector[${i}] must be a row of k = ${k} expert ids (num_experts_per_tok)`);
    const ids = Array.from(r as ArrayLike<unknown>);
    ids.forEach((e) => { if (!isInt(e) || e < 0 || e >= moe.nExperts) fail(`patch_route vector[${i}] has ${JSON.stringify(e)}: expert ids are whole numbers 0..${moe.nExperts - 1}`); });
    if (new Set(ids).size !== k) fail(`patch_route vector[${i}] lists an expert twice: ${JSON.stringify(ids)}`);
    out.set(ids as number[], i * k);
  });
  if (last >= rows.length) fail(`patch_route source has ${rows.length} positions, but the intervention reaches position ${last}; restrict "positions" to {"start": 0, "end": ${rows.length}} or use a longer source`);
  return out;
}
