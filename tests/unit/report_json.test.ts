import { describe, expect, it } from 'vitest';
import type { PatchingResult } from '../../workers/engine/studies/patching';
import type { ReportResult } from '../../workers/engine/studies/report';
import { gridRows, patchJson, reportJson } from '../../workers/engine/studies/report_json';

/**
 * The runner's JSON of a patching grid and a report (studies/report_json.ts): every key with the
 * value it must carry, written out for a small hand-made result (2 layers × 3 positions), with and
 * without the probe and window parts (their keys then null). The whole object is compared, so a
 * missing, extra or misnamed key fails.
 */
const grid: PatchingResult = {
  hook: 'resid_pre', hookTemplate: 'blocks.{l}.hook_resid_pre', direction: 'denoise', metric: 'final', nLayers: 2,
  columns: 'position', nCols: 3, cleanIds: [1, 2, 3], corruptIds: [1, 4, 3], cleanTokens: ['<s>', ' Lily', ' went'], corruptTokens: ['<s>', ' Tom', ' went'],
  good: { text: ' Tom', ids: [9], firstIds: [9] } as unknown as PatchingResult['good'], bad: { text: ' Lily', ids: [8], firstIds: [8] } as unknown as PatchingResult['bad'],
  cleanMargin: 1.5, corruptMargin: -0.5,
  patchedMargin: Float32Array.from([1, 2, 3, 4, 5, 6]), recovery: Float32Array.from([0.5, 0.25, 1, 0, 0.75, 0.125]), layerRecovery: Float32Array.from([1, 0.5]),
  positionsComputed: 12, cellsSkipped: 1,
};
const patchWant = {
  hook: 'blocks.{l}.hook_resid_pre', direction: 'denoise', metric: 'final', columns: 'position',
  clean_tokens: ['<s>', ' Lily', ' went'], corrupt_tokens: ['<s>', ' Tom', ' went'], clean_margin: 1.5, corrupt_margin: -0.5,
  recovery: [[0.5, 0.25, 1], [0, 0.75, 0.125]], layer_recovery: [1, 0.5], patched_margin: [[1, 2, 3], [4, 5, 6]],
};

const base: ReportResult = {
  nPrompts: 1, label: 'one prompt', threshold: 0.1, causalRecovery: 0.5, nLayers: 2,
  visible: { layer: 1, token: 2, curve: [0.5, 1, 2], band: null, interval: null },
  causal: { layer: 1, positions: [0, 2], trivial: { positions: [0], recovery: 1 }, curve: [1, 0.75], band: null, interval: null, skipped: 0 },
  probe: null, changeable: null, patching: grid,
  prompts: [{ clean: 'Lily went', corrupt: 'Tom went', lensLast: [0.5, 1, 2], finalSign: 1, visibleLayer: 1, visibleToken: 2, maxRecovery: [1, 0.75], causalLayer: 1, causalPositions: [0, 2], window: null }],
};

describe('patchJson and gridRows', () => {
  it('rows of a flat grid; every key of `branchpoint patch`', () => {
    expect(gridRows([1, 2, 3, 4, 5, 6], 2)).toEqual([[1, 2], [3, 4], [5, 6]]);
    expect(gridRows([], 4)).toEqual([]);
    expect(patchJson(grid)).toStrictEqual(patchWant);
  });
});

describe('reportJson', () => {
  it('one prompt without a labelled set or a window: the probe and window keys are null', () => {
    expect(reportJson(base)).toStrictEqual({
      label: 'one prompt', n_prompts: 1, threshold: 0.1, causal_recovery: 0.5,
      visible_layer: 1, visible_token: 2, visible_interval: null, lens_margin: [0.5, 1, 2], lens_margin_band: null,
      causal_layer: 1, causal_positions: [0, 2], causal_trivial_positions: [0], causal_trivial_recovery: 1, causal_interval: null, max_recovery: [1, 0.75], max_recovery_band: null, patch_skipped: 0,
      first_layer_95: null, first_layer_95_interval: null, probe_accuracy: null, probe_accuracy_band: null, probe_control_accuracy: null, probe_classes: null,
      point_of_no_return: null, point_of_no_return_interval: null, window_ks: null, window_outcome: null, window_outcome_band: null,
      window_unsteered_outcome: null, window_score: null, window_skipped: null,
      patch: patchWant, shared_prefix: null,
      prompts: [{ clean: 'Lily went', corrupt: 'Tom went', visible_layer: 1, visible_token: 2, causal_layer: 1, point_of_no_return: null }],
    });
  });

  it('a set with probe and window: every value carried over, per prompt its point of no return (null where it has none)', () => {
    const r: ReportResult = {
      ...base, nPrompts: 2, label: '2 prompts',
      visible: { ...base.visible, band: [[0, 0.5, 1], [1, 1.5, 3]], interval: [0, 2] },
      causal: { ...base.causal, band: [[0.5, 0.5], [1, 1]], interval: [0, 1], skipped: 1 },
      probe: { firstLayer95: 2, accuracy: [0.5, 0.75, 1], band: [[0.25, 0.5, 1], [0.75, 1, 1]], interval: [1, 2], controlAccuracy: [0.5, 0.25, 0.5], auroc: [0.5, 0.8, 1], classes: ['girl', 'boy'], nPositive: 3, nNegative: 3, folds: 3 },
      changeable: { pointOfNoReturn: 3, ks: [0, 1, 2, 3], outcome: [-1, -0.5, -0.25, -0.125], unsteered: 2, band: [[-2, -1, -1, -1], [0, 0, 0, 0]], interval: [2, 3], score: { kind: 'mean', last: 2 }, maxNewTokens: 4, skipped: 1 },
      prompts: [
        { ...base.prompts[0], window: { outcome: [-1, 1], unsteered: 1, pointOfNoReturn: 0 } },
        { ...base.prompts[0], clean: 'Tom went', corrupt: null, visibleLayer: null, visibleToken: null, causalLayer: null, window: { outcome: [1, 1], unsteered: 1, pointOfNoReturn: null } },
      ],
    };
    expect(reportJson(r)).toStrictEqual({
      label: '2 prompts', n_prompts: 2, threshold: 0.1, causal_recovery: 0.5,
      visible_layer: 1, visible_token: 2, visible_interval: [0, 2], lens_margin: [0.5, 1, 2], lens_margin_band: [[0, 0.5, 1], [1, 1.5, 3]],
      causal_layer: 1, causal_positions: [0, 2], causal_trivial_positions: [0], causal_trivial_recovery: 1, causal_interval: [0, 1], max_recovery: [1, 0.75], max_recovery_band: [[0.5, 0.5], [1, 1]], patch_skipped: 1,
      first_layer_95: 2, first_layer_95_interval: [1, 2], probe_accuracy: [0.5, 0.75, 1], probe_accuracy_band: [[0.25, 0.5, 1], [0.75, 1, 1]],
      probe_control_accuracy: [0.5, 0.25, 0.5], probe_classes: ['girl', 'boy'],
      point_of_no_return: 3, point_of_no_return_interval: [2, 3], window_ks: [0, 1, 2, 3], window_outcome: [-1, -0.5, -0.25, -0.125],
      window_outcome_band: [[-2, -1, -1, -1], [0, 0, 0, 0]], window_unsteered_outcome: 2, window_score: { kind: 'mean', last: 2 }, window_skipped: 1,
      patch: patchWant, shared_prefix: null,
      prompts: [
        { clean: 'Lily went', corrupt: 'Tom went', visible_layer: 1, visible_token: 2, causal_layer: 1, point_of_no_return: 0 },
        { clean: 'Tom went', corrupt: null, visible_layer: null, visible_token: null, causal_layer: null, point_of_no_return: null },
      ],
    });
  });

  it('a probe whose interval is undefined and a window with no point of no return give null, not a missing key', () => {
    const r: ReportResult = {
      ...base,
      probe: { firstLayer95: 0, accuracy: [1, 1, 1], band: [[1, 1, 1], [1, 1, 1]], interval: null, controlAccuracy: [0.5, 0.5, 0.5], auroc: [1, 1, 1], classes: ['a', 'b'], nPositive: 2, nNegative: 2, folds: 2 },
      changeable: { pointOfNoReturn: null, ks: [0], outcome: [1], unsteered: 1, band: null, interval: null, score: { kind: 'margin', step: 0 }, maxNewTokens: 1, skipped: 0 },
    };
    const j = reportJson(r);
    expect([j.first_layer_95, j.first_layer_95_interval, j.point_of_no_return, j.point_of_no_return_interval, j.window_outcome_band, j.window_skipped]).toEqual([0, null, null, null, null, 0]);
  });
});
