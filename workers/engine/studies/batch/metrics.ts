/**
 * The scalar columns of a batch study (DESIGN.md §3). The first four come from one prompt's
 * Analysis (metricsOf); probe_score and patch_recovery need a direction or a patch cell and are
 * computed in batch.ts (studies/patching.ts, a captured hook).
 */
import type { Analysis } from '../../api';

export const BATCH_METRICS = ['final_margin', 'sequence_margin', 'lens_visible_layer', 'sink_rate', 'probe_score', 'patch_recovery'] as const;
export type BatchMetric = (typeof BATCH_METRICS)[number];
/** The columns every prompt's Analysis gives, without further settings. */
export const ANALYSIS_METRICS = ['final_margin', 'sequence_margin', 'lens_visible_layer', 'sink_rate'] as const satisfies readonly BatchMetric[];

/** What each column means (the runner's help, the table's header titles). */
export const METRIC_DOCS: Record<BatchMetric, string> = {
  final_margin: 'Δ = log p(good) − log p(bad) of the first tokens after the prompt, final layer (nats)',
  sequence_margin: 'teacher-forced Δ of the whole futures (sum of the branch tokens\' log-probs; nats)',
  lens_visible_layer: 'earliest lens row (0 = embed, r = L{r−1}: the table shows the name) from which Δ at the last prompt token keeps its final sign with |Δ| ≥ the threshold; empty when the final |Δ| is below it',
  sink_rate: 'fraction of heads with α_0 > ε, averaged over layers (Gu et al. 2024, arXiv 2410.10781)',
  probe_score: 'projection h·v/‖v‖ of the residual stream at the last prompt token on a direction v read at its hook (e.g. a probe\'s difference of means; Alain & Bengio arXiv 1610.01644); units of the hook\'s activations',
  patch_recovery: 'normalised recovery r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt) when the clean prompt\'s value at one (hook, layer, position) is patched into the template\'s corrupt variant (final margin, denoising; Heimersheim & Nanda arXiv 2404.15255)',
};

/** Reads a `--metric` list: names separated by commas, or "all". @throws Error naming an unknown metric. */
export function parseMetrics(text: string): BatchMetric[] {
  if (text.trim() === 'all') return [...BATCH_METRICS];
  const names = text.split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) if (!(BATCH_METRICS as readonly string[]).includes(n)) throw new Error(`unknown metric "${n}" (known: ${BATCH_METRICS.join(', ')})`);
  if (names.length === 0) throw new Error(`name at least one metric (${BATCH_METRICS.join(', ')})`);
  return names as BatchMetric[];
}

/**
 * Lens-visibility layer: the smallest row l of the logit-lens grid (0 = embeddings, n_layers =
 * final) such that at every row l' ≥ l the margin at position t has the final row's sign and
 * |Δ^{l'}_t| ≥ threshold — where the decision becomes readable and stays so (DESIGN.md §3
 * "Decision-point report", visible; nostalgebraist 2020 logit lens).
 * @param lensMargin Δ^l_t [(n_layers+1)·T], row-major by layer.
 * @returns the row, or null when the final |Δ_t| is below the threshold.
 */
export function lensVisibleLayer(lensMargin: Float32Array, nLayers: number, T: number, t: number, threshold: number): number | null {
  const at = (l: number) => lensMargin[l * T + t];
  const final = at(nLayers);
  if (!(Math.abs(final) >= threshold)) return null;
  let l = nLayers;
  while (l > 0 && Math.sign(at(l - 1)) === Math.sign(final) && Math.abs(at(l - 1)) >= threshold) l--;
  return l;
}

/** Every Analysis metric of one analysed prompt (the last position is the decision point: the last prompt token, or after the futures' shared prefix). */
export function metricsOf(a: Analysis, visibleThreshold: number): Record<(typeof ANALYSIS_METRICS)[number], number | null> {
  const T = a.ids.length;
  const rates = Array.from(a.sinks.sinkRate);
  return {
    final_margin: a.finalMargin[T - 1],
    sequence_margin: a.sequenceMargin,
    lens_visible_layer: lensVisibleLayer(a.lensMargin, a.nLayers, T, T - 1, visibleThreshold),
    sink_rate: rates.reduce((s, x) => s + x, 0) / rates.length,
  };
}
