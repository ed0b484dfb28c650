import { useStore, type AppState } from '../store';
import { staleParts, turnOf, type Current } from '../lib/stale';
import { loadStaleness, loadedNow } from '../lib/model_identity';
import { analyse } from './analyse';
import { generate } from './generate';
import { runSweep } from './sweep';
import { captureActivations } from './activations';

/** The experiment as edited and the load ready now, as lib/stale.ts compares results with them. */
function current(s: AppState): Current {
  const now = loadedNow(s);
  return { model: now.label, identity: now.identity, prompt: s.prompt, ...turnOf(s), good: s.good, bad: s.bad, interventions: s.interventions };
}

/** What of the open view's results no longer answers the experiment as edited (lib/stale.ts rules; missing counts as stale). */
export interface SlideStaleness {
  /** The analysis (every analysis view draws it: heatmap, sinks, norms). */
  analysis: boolean;
  /** The view's own run, where it has one (generation, dose–response sweep); false elsewhere. */
  view: boolean;
}

/**
 * Which results of the open view are stale for the experiment as edited: the analysis by
 * lib/stale.ts staleParts; a generation by its load, prompt and interventions (it records no
 * futures); a sweep by its load, prompt and futures (it runs without the list's interventions).
 */
export function slideStaleness(s: AppState): SlideStaleness {
  const now = current(s);
  const analysis = !s.result || staleParts(s.result, now).length > 0;
  let view = false;
  if (s.view === 'generation') {
    const g = s.gen;
    view = !g || staleParts({ ...g, good: now.good, bad: now.bad }, now).length > 0;
  } else if (s.view === 'dose') {
    const w = s.sweep;
    view = !!s.sweepSettings.vectorId && (!w || loadStaleness(w.modelLabel, w.computedWith, loadedNow(s)) !== null
      || w.prompt !== s.prompt || w.good !== s.good.value || w.bad !== s.bad.value);
  }
  return { analysis, view };
}

/**
 * Poster mode's first slide is the user's experiment as edited: its side panel shows that prompt
 * and its QR code opens that experiment, so the figure beside them must answer it too. Entering
 * poster mode reruns what the open view shows and is stale (trials saw slide 1 show an analysis of
 * the float32 model, without the interventions, beside the QR code of the Q8_0 one with them):
 * Analyse, then the view's own run (Generate, the sweep, the capture), as a restored experiment
 * reruns (actions/experiment.ts restoreExperiment). Nothing runs without a ready model: the
 * view's stale line then says what changed.
 */
export async function refreshOwnSlide(): Promise<void> {
  const s = useStore.getState();
  if (s.modelStatus !== 'ready') return;
  const stale = slideStaleness(s);
  if (stale.analysis) await analyse();
  const after = useStore.getState();
  if (after.job || after.modelStatus !== 'ready') return;
  if (after.view === 'activations' && (stale.analysis || !after.captured)) await captureActivations();
  if (stale.view && after.view === 'generation') await generate();
  if (stale.view && after.view === 'dose') await runSweep();
}
