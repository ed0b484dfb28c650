import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { ReportJob, ReportProgress } from '../../workers/protocol';
import { futureInput } from '../lib/futures';
import { runJob } from './job';
import { runStudy } from './study';
import { probeSet } from './probe';
import { windowSetup } from './window';
import { inOrder } from './worker';
import { currentIdentity } from './identity';
import { turnOf } from '../lib/stale';

/** The report's request as the Report view is set up now, with its progress total and what the display records. */
function reportSetup(): { req: ReportJob; total: number; setup: ReturnType<typeof windowSetup> | null; set: ReturnType<typeof probeSet> | null } {
  const s = useStore.getState();
  const { clean, corrupt } = s.patchingSettings;
  const rs = s.reportSettings;
  const withWindow = rs.changeable && s.interventions.length > 0;
  const setup = withWindow ? windowSetup() : null;
  const set = rs.useSet ? probeSet() : null;
  const req: ReportJob = {
    clean, corrupt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, good: futureInput(s.good), bad: futureInput(s.bad), threshold: rs.threshold,
    ...(setup ? { window: { specs: setup.specs, specLabels: setup.specLabels, maxNewTokens: setup.maxNewTokens, kMax: setup.kMax, score: setup.score } } : {}),
    ...(set ? { labelled: { positive: set.positive, negative: set.negative, classes: set.classes, position: set.position }, probe: { folds: s.probeSettings.folds, seed: s.probeSettings.seed } } : {}),
  };
  const nPrompts = 1 + (set ? set.positive.length + set.negative.length : 0);
  return { req, total: nPrompts * (setup ? 3 : 2) + (set ? 1 : 0), setup, set };
}

/**
 * Runs the decision-point report (DESIGN.md §3) on the Patching view's prompts and the experiment's
 * futures; with "changeable" on and an intervention placed, the Window view's setup runs on every
 * prompt; with "prompt set" on, the Probes view's labelled set joins (probe + bootstrap intervals).
 * Progress counts stages (lens, patching, window per prompt; the probes); Cancel keeps the previous report.
 */
export async function runReport(): Promise<void> {
  await runJob('report', 'Decision-point report', 'Could not build the decision-point report', async () => {
    const s = useStore.getState();
    const { clean, corrupt } = s.patchingSettings;
    const { req, total, setup, set } = reportSetup();
    s.setJobSteps({ done: 0, total });
    const onProgress = Comlink.proxy((p: ReportProgress) => useStore.getState().setJobSteps(p));
    const result = await inOrder((w) => w.report(req, onProgress));
    useStore.getState().setReport({
      result, modelLabel: s.modelLabel ?? '', computedWith: currentIdentity(), clean, corrupt, ...turnOf(s), good: s.good, bad: s.bad,
      steering: setup ? setup.steering.map((a) => `${a.draft.type} at ${a.draft.hook}`).join(', ') : null, windowSteering: setup?.steering ?? null, scoreLabel: setup?.scoreLabel ?? null,
      setSource: set ? set.source : null,
    });
  }, { cancellable: true });
}

/** The request the two-model report would send now (the `reportPair` study; null when a future does not parse). */
export function reportPairRequest(): ReportJob | null {
  try {
    return reportSetup().req;
  } catch {
    return null;
  }
}

/**
 * Runs the decision-point report on model A and model B side by side (the `reportPair` study): the
 * same setup as runReport, both reports and B − A of visible layer, causal layer and point of no return.
 */
export async function runReportPair(): Promise<void> {
  const { req, total } = reportSetup();
  await runStudy('reportPair', req, { label: 'Decision-point report on A and B', what: 'Could not build the two-model report', total: 2 * total });
}
