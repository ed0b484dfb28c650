/**
 * A span of positions run through the model under the steps a generation gives them (DESIGN.md §2),
 * and the refusal of non-finite results (issue #8): a run whose logits, log-probs or margins are not
 * finite is refused with an error naming the hook, layer and token position where the first
 * non-finite activation appeared, found by re-running the same span with captures (only when
 * something is already wrong, so a healthy run pays one scan of its logits). Sources of such values:
 * NaN/Inf weights, a dose whose result overflows float32 (|α·v| > 3.4e38), activations that overflow
 * in a layer. Prefix KV reuse over spans: model/kv_prefix.ts.
 */
import type { Tensor } from '../backend/backend';
import { hookInfo, hookNames } from './hooks';
import { activeAtStep, selectRows, type Intervention } from './intervention';
import { RunContext } from './run_context';
import type { LogitRows, Transformer } from './transformer';
import { firstNonFinite } from '../analysis/finite';
import { NonFiniteError, type NonFiniteSite } from './non_finite';

/** Options of a span of positions run through the model. */
export interface SpanOptions {
  /** Prompt length: positions ≥ nPrompt are generated (or teacher-forced) tokens. */
  nPrompt: number;
  interventions?: readonly Intervention[];
  /** Hook names to capture; rows cover the span's positions only. */
  capture?: readonly string[];
  /** 'last' (default): [1, d_vocab] at the span's last position; 'all': [n, d_vocab]; 'none'. */
  logits?: LogitRows;
  /** true: return non-finite logits as they are (locateNonFinite reads them to find the fault). */
  unchecked?: boolean;
}

export interface SpanOutput {
  /** Logits as asked ('last': [d_vocab]; 'all': [n·d_vocab] row-major), null for 'none'. */
  logits: Float32Array | null;
  /** Captured hooks, read back to the host: row hooks [n, width] over the span's positions. */
  captured: Map<string, Float32Array>;
}

/** The generation step whose forward pass reads position t (DESIGN.md §2): 0 in the prompt, t − nPrompt + 1 after it. */
export function stepOfPosition(t: number, nPrompt: number): number {
  return t < nPrompt ? 0 : t - nPrompt + 1;
}

/**
 * The first position an intervention acts on in a run over positions [0, total) whose steps follow
 * stepOfPosition; Infinity when it acts on none. A run that adds this intervention to a reference
 * can reuse the reference's cache rows before this position.
 */
export function firstTouchedPosition(iv: Intervention, nPrompt: number, total: number): number {
  for (let t = 0; t < total; t++) {
    const step = stepOfPosition(t, nPrompt);
    if (activeAtStep(iv, step) && selectRows(iv.positions, { pos0: t, n: 1, nPrompt, step })[0] === 1) return t;
  }
  return Number.POSITIVE_INFINITY;
}

/**
 * Runs ids[a..b) at absolute positions a..b−1 through the model; cache rows [0, a) must already
 * hold this run's prefix. The span is split into forward calls where the set of interventions
 * active at stepOfPosition changes, so each position is processed under the step it has in a
 * generation (a teacher-forced branch token at position n_prompt + j is step j + 1).
 * @param ids the whole sequence [≥ b] (positions are indices into it).
 * @throws Error for an empty or out-of-range span, a sequence longer than the KV cache, or a
 *   capture of a [head, query, key] hook over a span that needs more than one call;
 *   NonFiniteError when the logits asked for hold NaN/Inf (unless opts.unchecked), naming the hook,
 *   layer and position where the first non-finite value appeared (every analysis built on spans —
 *   patching, windows, branches — refuses them rather than showing them).
 */
export async function forwardSpan(model: Transformer, ids: readonly number[], a: number, b: number, opts: SpanOptions): Promise<SpanOutput> {
  if (!(Number.isInteger(a) && Number.isInteger(b) && a >= 0 && a < b && b <= ids.length)) throw new Error(`forwardSpan: positions [${a}, ${b}) are not a non-empty span of the ${ids.length} ids`);
  const ivs = opts.interventions ?? [];
  const key = (t: number) => ivs.map((iv) => (activeAtStep(iv, stepOfPosition(t, opts.nPrompt)) ? '1' : '0')).join('');
  const segments: [number, number][] = [];
  for (let t = a; t < b; t++) {
    if (t === a || key(t) !== key(t - 1)) segments.push([t, t + 1]);
    else segments[segments.length - 1][1] = t + 1;
  }
  const want = new Set(opts.capture ?? []);
  const mode = opts.logits ?? 'last';
  const be = model.backend;
  const parts = new Map<string, Float32Array[]>();
  const logitParts: Float32Array[] = [];
  for (let s = 0; s < segments.length; s++) {
    const [lo, hi] = segments[s];
    const ctx = new RunContext(be, { pos0: lo, n: hi - lo, nPrompt: opts.nPrompt, step: stepOfPosition(lo, opts.nPrompt) }, (n) => want.has(n), ivs);
    let logits: Tensor | null = null;
    try {
      logits = model.forward(Int32Array.from(ids.slice(lo, hi)), ctx, mode === 'all' ? 'all' : mode === 'last' && s === segments.length - 1 ? 'last' : 'none');
      if (logits) logitParts.push(await be.read(logits));
      for (const [name, t] of ctx.captured) parts.set(name, [...(parts.get(name) ?? []), await be.read(t)]);
    } finally {
      if (logits) be.release(logits);
      ctx.release();
    }
  }
  const captured = new Map<string, Float32Array>();
  for (const [name, list] of parts) {
    if (list.length > 1 && !hookInfo(name)?.shape.startsWith('[pos')) throw new Error(`${name} is [head, query, key]; capture it over a span that runs in one call (the interventions' step windows split [${a}, ${b}))`);
    captured.set(name, concat(list));
  }
  const logits = mode === 'none' ? null : concat(logitParts);
  if (logits && !opts.unchecked) await assertFiniteRun(logits, 'the logits', model, ids.slice(0, b), opts.nPrompt, ivs);
  return { logits, captured };
}

function concat(list: Float32Array[]): Float32Array {
  if (list.length === 1) return list[0];
  const out = new Float32Array(list.reduce((s, x) => s + x.length, 0));
  let o = 0;
  for (const x of list) { out.set(x, o); o += x.length; }
  return out;
}

/**
 * Refuses `values` (logits, log-probs or margins computed from a run of ids[0..n)) that hold a NaN
 * or ±Inf: locates the first non-finite activation by re-running the sequence (locateNonFinite).
 * @param token names the token at a position (for the message), when a tokenizer is at hand.
 * @throws NonFiniteError when a value is not finite; returns when all are.
 */
export async function assertFiniteRun(values: ArrayLike<number>, what: string, model: Transformer, ids: readonly number[], nPrompt: number, interventions: readonly Intervention[], token?: (position: number) => string): Promise<void> {
  if (firstNonFinite(values) < 0) return;
  let site: NonFiniteSite | null = null;
  try {
    site = await locateNonFinite(model, ids, nPrompt, interventions);
  } catch { /* the re-run failed too: report without a site */ }
  if (site && site.position < 0) site = null;
  throw new NonFiniteError(what, site, site && token ? token(site.position) : undefined);
}

const layerOf = (hook: string): number | null => {
  const m = /^blocks\.(\d+)\./.exec(hook);
  return m ? Number(m[1]) : null;
};

/** The first row hook (hookNames order) among `names` whose captured value has a non-finite entry. */
function scan(names: readonly string[], captured: Map<string, Float32Array>, n: number): NonFiniteSite | null {
  for (const hook of names) {
    const v = captured.get(hook);
    if (!v) continue;
    const i = firstNonFinite(v);
    if (i >= 0) return { hook, layer: layerOf(hook), position: Math.floor(i / (v.length / n)), value: v[i] };
  }
  return null;
}

/**
 * Re-runs ids[0..n) with the same interventions (steps as in a generation: kv_prefix.forwardSpan)
 * and finds the first hook with a non-finite value: first over hook_embed and every
 * hook_resid_post (L + 1 captures), then over every row hook of the first bad block.
 * @returns the site, or {hook: 'logits', …} when every activation is finite (W_U or the final norm
 *   produced it), with position −1 when even the logits were finite on the re-run.
 */
export async function locateNonFinite(model: Transformer, ids: readonly number[], nPrompt: number, interventions: readonly Intervention[]): Promise<NonFiniteSite> {
  const all = hookNames(model.spec).filter((h) => hookInfo(h)?.shape.startsWith('[pos'));
  const n = ids.length;
  const coarse = all.filter((h) => !h.startsWith('blocks.') || h.endsWith('.hook_resid_post'));
  const first = await forwardSpan(model, ids, 0, n, { nPrompt, interventions, capture: coarse, logits: 'none', unchecked: true });
  const site = scan(coarse, first.captured, n);
  if (site && site.layer !== null) {
    const block = all.filter((h) => layerOf(h) === site.layer);
    const fine = await forwardSpan(model, ids, 0, n, { nPrompt, interventions, capture: block, logits: 'none', unchecked: true });
    return scan(block, fine.captured, n) ?? site;
  }
  if (site) return site;
  const out = await forwardSpan(model, ids, 0, n, { nPrompt, interventions, capture: ['ln_final.hook_normalized'], logits: 'all', unchecked: true });
  const s = scan(['ln_final.hook_normalized'], out.captured, n);
  if (s) return s;
  const i = firstNonFinite(out.logits!);
  return { hook: 'logits', layer: null, position: i < 0 ? -1 : Math.floor(i / model.spec.dVocab), value: i < 0 ? 0 : out.logits![i] };
}
