import type { ReportPanel } from '../components/ReportFigure';
import type { ReportResult } from '../../workers/protocol';
import { residShort } from './layer_names';

/**
 * The report's panels: visible and causal over residual rows (with the probe's curve when computed),
 * changeable over start steps (its placeholder `Not computed: {missing}.` without a window).
 * @param prefix the panels' test ids: `${prefix}-visible`, `-causal`, `-changeable`.
 */
export function reportPanels(r: ReportResult | null, missing: string, prefix = 'report-panel'): { layers: ReportPanel[]; step: ReportPanel } {
  const panels: ReportPanel[] = r ? [
    {
      title: 'Visible: lens margin at the last token, toward the final answer', yLabel: 'Δ (nats)', curve: r.visible.curve, band: r.visible.band,
      reference: { y: r.threshold, label: `threshold ${r.threshold}` },
      mark: { x: r.visible.layer, label: r.visible.layer === null ? 'not visible' : `visible from ${residShort(r.visible.layer)}`, interval: r.visible.interval },
      testId: `${prefix}-visible`,
    },
    {
      title: 'Causal: best recovery over positions, patching hook_resid_pre', yLabel: 'max r', curve: r.causal.curve, band: r.causal.band,
      reference: { y: r.causalRecovery, label: `r = ${r.causalRecovery}` },
      mark: { x: r.causal.layer, label: r.causal.layer === null ? 'never causal' : `causal from ${residShort(r.causal.layer)}`, interval: r.causal.interval },
      testId: `${prefix}-causal`,
    },
  ] : [];
  if (r?.probe && panels[0]) panels[0].extra = { name: 'probe held-out accuracy (right axis)', curve: r.probe.accuracy, band: r.probe.band, domain: [0, 1], mark: { x: r.probe.firstLayer95, label: `95 % of best from ${residShort(r.probe.firstLayer95)}` } };
  const w = r?.changeable ?? null;
  const step: ReportPanel = {
    title: r && r.nPrompts > 1 ? 'Changeable: mean outcome toward the unsteered one, on from k' : 'Changeable: outcome with the intervention on from step k', yLabel: 'outcome', curve: w?.outcome ?? [], band: w?.band,
    reference: { y: 0, label: 'sign change' },
    mark: { x: w?.pointOfNoReturn ?? null, label: w ? (w.pointOfNoReturn === null ? (w.band ? 'no start step flips the mean outcome (band: interval over prompts)' : 'no start step flips the outcome') : `point of no return: step ${w.pointOfNoReturn}`) : 'point of no return: —', interval: w?.interval },
    empty: w ? undefined : `Not computed: ${missing}.`, testId: `${prefix}-changeable`,
  };
  return { layers: panels, step };
}
