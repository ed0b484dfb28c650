/**
 * The runner's JSON form of a patching grid and of a decision-point report (snake_case keys,
 * nested arrays). The runner prints it and the UI exports it, so the two agree key for key.
 */
import type { PatchingResult } from './patching';
import type { ReportResult } from './report';
import type { ReportDifference, ReportPairResult } from './report_pair';

/** Rows [n_rows][n_cols] of a flat grid. */
export function gridRows(flat: ArrayLike<number>, nCols: number): number[][] {
  return Array.from({ length: flat.length / nCols }, (_, r) => Array.from({ length: nCols }, (_, c) => flat[r * nCols + c]));
}

/** `branchpoint patch` output. */
export function patchJson(r: PatchingResult): Record<string, unknown> {
  return {
    hook: r.hookTemplate, direction: r.direction, metric: r.metric, columns: r.columns,
    clean_tokens: r.cleanTokens, corrupt_tokens: r.corruptTokens,
    clean_margin: r.cleanMargin, corrupt_margin: r.corruptMargin,
    recovery: gridRows(r.recovery, r.nCols), layer_recovery: Array.from(r.layerRecovery),
    patched_margin: gridRows(r.patchedMargin, r.nCols),
  };
}

/** `branchpoint report` output. */
export function reportJson(r: ReportResult): Record<string, unknown> {
  return {
    label: r.label, n_prompts: r.nPrompts, threshold: r.threshold, causal_recovery: r.causalRecovery,
    visible_layer: r.visible.layer, visible_token: r.visible.token, visible_interval: r.visible.interval,
    lens_margin: r.visible.curve, lens_margin_band: r.visible.band,
    causal_layer: r.causal.layer, causal_positions: r.causal.positions, causal_interval: r.causal.interval,
    causal_trivial_positions: r.causal.trivial.positions, causal_trivial_recovery: r.causal.trivial.recovery,
    max_recovery: r.causal.curve, max_recovery_band: r.causal.band, patch_skipped: r.causal.skipped,
    first_layer_95: r.probe?.firstLayer95 ?? null, first_layer_95_interval: r.probe?.interval ?? null,
    probe_accuracy: r.probe?.accuracy ?? null, probe_accuracy_band: r.probe?.band ?? null, probe_control_accuracy: r.probe?.controlAccuracy ?? null,
    probe_classes: r.probe?.classes ?? null,
    point_of_no_return: r.changeable?.pointOfNoReturn ?? null, point_of_no_return_interval: r.changeable?.interval ?? null,
    window_ks: r.changeable?.ks ?? null, window_outcome: r.changeable?.outcome ?? null, window_outcome_band: r.changeable?.band ?? null,
    window_unsteered_outcome: r.changeable?.unsteered ?? null, window_score: r.changeable?.score ?? null, window_skipped: r.changeable?.skipped ?? null,
    patch: patchJson(r.patching),
    shared_prefix: r.sharedPrefix ? { note: r.sharedPrefix.note, ids: r.sharedPrefix.ids, text: r.sharedPrefix.text } : null,
    prompts: r.prompts.map((p) => ({ clean: p.clean, corrupt: p.corrupt, visible_layer: p.visibleLayer, visible_token: p.visibleToken, causal_layer: p.causalLayer, point_of_no_return: p.window?.pointOfNoReturn ?? null })),
  };
}

/** One B − A of the two-model report. */
function differenceJson(d: ReportDifference): Record<string, unknown> {
  return { a: d.a, b: d.b, value: d.value, interval: d.interval, defined: d.defined, n_paired: d.nPaired };
}

/** `branchpoint report --model-b` output: each model's report (the keys above) and B − A of its three answers. */
export function reportPairJson(r: ReportPairResult): Record<string, unknown> {
  const d = r.difference;
  return {
    label_a: r.labelA, label_b: r.labelB, a: reportJson(r.a), b: reportJson(r.b),
    difference: {
      visible_layer: differenceJson(d.visibleLayer), causal_layer: differenceJson(d.causalLayer),
      point_of_no_return: d.pointOfNoReturn ? differenceJson(d.pointOfNoReturn) : null,
    },
  };
}
