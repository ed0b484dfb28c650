/**
 * Non-finite values (NaN, ±Inf) never reach the user as results (issue #8): a run whose logits,
 * log-probs or margins are not finite is refused with an error naming the hook, layer and token
 * position where the first non-finite activation appeared, found by re-running the same forward
 * pass with captures (only when something is already wrong, so a healthy run pays one scan of its
 * logits). Sources of such values: NaN/Inf weights, a dose whose result overflows float32
 * (|α·v| > 3.4e38), activations that overflow in a layer.
 */
import { hookInfo, hookNames } from '../hooks';
import { forwardSpan } from '../model/kv_prefix';
import type { Intervention } from '../model/intervention';
import type { Transformer } from '../model/transformer';

/** Index of the first NaN or ±Infinity in `a`, or −1 when every value is finite. */
export function firstNonFinite(a: ArrayLike<number>): number {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return i;
  return -1;
}

/** Where a non-finite value first appeared in a forward pass. */
export interface NonFiniteSite {
  /** Hook name (TransformerLens), e.g. blocks.2.hook_attn_out; 'logits' when every hook was finite. */
  hook: string;
  /** Block index, or null for hook_embed / ln_final / logits. */
  layer: number | null;
  /** Token position (row) of the first non-finite value. */
  position: number;
  /** That value: NaN, Infinity or −Infinity. */
  value: number;
}

/** Thrown instead of returning NaN/Inf results. `site` is null when the forward pass could not be re-run to locate it. */
export class NonFiniteError extends Error {
  constructor(what: string, readonly site: NonFiniteSite | null, token?: string) {
    super(site
      ? `${what} is not finite: the first non-finite value (${site.value}) appears at ${site.hook}${site.layer !== null ? ` (layer ${site.layer})` : ''}, position ${site.position}${token !== undefined ? ` (token ${JSON.stringify(token)})` : ''}. ` +
        `Check the weights and any intervention at or before that hook (a dose too large for float32, a vector with NaN)`
      : `${what} is not finite (NaN or Infinity)`);
    this.name = 'NonFiniteError';
  }
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
