import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { Progress, WindowJob, WindowScore } from '../../workers/protocol';
import type { WindowSettings } from '../store/window';
import type { InterventionDraft } from '../store/steering';
import type { AppliedIntervention } from '../store/results';
import { futureInput } from '../lib/futures';
import { appliedInterventions, interventionLabel, toSpec } from '../lib/specs';
import { runJob } from './job';
import { inOrder } from './worker';
import { currentIdentity } from './identity';

/**
 * The score as set in the view, and its words for captions.
 * @throws Error for an argument that is not a whole number (mean, margin) or an empty text (contains).
 */
export function windowScore(set: WindowSettings, N: number): { score: WindowScore; label: string } {
  const arg = set.scoreArg.trim();
  const int = (what: string) => {
    if (!/^\d+$/.test(arg)) throw new Error(`${what}: write a whole number (got "${set.scoreArg}")`);
    return Number(arg);
  };
  if (set.score === 'mean') {
    const last = arg === '' ? N : int('the number of last steps to average');
    return { score: { kind: 'mean', last }, label: last === N ? `mean margin over all ${N} steps` : `mean margin over the last ${last} steps` };
  }
  if (set.score === 'margin') {
    const step = int('the step whose margin is the outcome');
    return { score: { kind: 'margin', step }, label: `margin at step ${step}` };
  }
  if (arg === '') throw new Error('write the text whose appearance is the outcome');
  return { score: { kind: 'contains', text: set.scoreArg }, label: `+1 when the text contains “${set.scoreArg}”, −1 when not` };
}

/**
 * The window as set up in the Window view's fields (shared with the report's changeable panel):
 * the chosen intervention(s) as specs with their labels, N, K and the score.
 * @throws Error when no intervention is placed, or for a bad score argument.
 */
export function windowSetup(): Pick<WindowJob, 'specs' | 'specLabels' | 'maxNewTokens' | 'kMax' | 'score'> & { steering: AppliedIntervention[]; scoreLabel: string } {
  const s = useStore.getState();
  const set = s.windowSettings;
  const steering = windowApplied(s.interventions, set.interventionId);
  if (!steering.length) throw new Error('place an intervention first (Interventions list, or click a heatmap cell): the window switches it on from step k');
  const N = set.maxNewTokens;
  const { score, label } = windowScore(set, N);
  return {
    specs: steering.map((a) => toSpec(a, s.vectors)), specLabels: steering.map((a) => interventionLabel(a.n)),
    maxNewTokens: N, kMax: set.kMax.trim() === '' ? undefined : Number(set.kMax), score, steering, scoreLabel: label,
  };
}

/**
 * The interventions the window switches on from step k: every enabled one of the list, or the one
 * chosen in the Window view (`interventionId`, even when switched off in the list), numbered by
 * their place in the list. Empty when none is placed.
 */
export function windowApplied(list: readonly InterventionDraft[], interventionId: number | null): AppliedIntervention[] {
  const chosen = interventionId === null ? list : list.filter((d) => d.id === interventionId);
  return appliedInterventions(chosen.map((d) => ({ ...d, enabled: d.enabled || d.id === interventionId })))
    .map((a) => ({ ...a, n: list.findIndex((d) => d.id === a.draft.id) + 1 }));
}

/** Token passes of a window of N steps and start steps 0..K: the unsteered run, its prefill, and N − k per start step. */
export function windowPasses(N: number, K: number): number {
  return N + 1 + Array.from({ length: K + 1 }, (_, k) => N - k).reduce((a, b) => a + b, 0);
}

/**
 * Runs the intervention window as set up in its view (DESIGN.md §3 "Intervention window") on the
 * experiment's prompt and futures: progress counts token passes; Cancel stops it between passes
 * and keeps the window on display.
 */
export async function runWindow(): Promise<void> {
  await runJob('window', 'Intervention window', 'Could not run the intervention window', async () => {
    const s = useStore.getState();
    const { steering, scoreLabel, ...setup } = windowSetup();
    const req: WindowJob = { prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, good: futureInput(s.good), bad: futureInput(s.bad), ...setup };
    s.setJobSteps({ done: 0, total: windowPasses(setup.maxNewTokens, setup.kMax ?? setup.maxNewTokens - 1) });
    const onProgress = Comlink.proxy((p: Progress) => useStore.getState().setJobSteps(p));
    const result = await inOrder((w) => w.interventionWindow(req, onProgress));
    useStore.getState().setWindowRun({
      result, modelLabel: s.modelLabel ?? '', computedWith: currentIdentity(), prompt: s.prompt, good: s.good.value, bad: s.bad.value,
      steering, scoreLabel, picked: result.pointOfNoReturn ?? 0,
    });
  }, { cancellable: true });
}
