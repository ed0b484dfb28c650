import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { LoadOptions, LoadProgress, ModelSource } from '../../workers/protocol';
import { runJob } from './job';
import { inOrder, worker } from './worker';
import { loadCancels } from '../lib/job_rules';
import { labelOf } from './model';

/**
 * Loads model B beside model A in the worker (the Compare view), replacing the B loaded before,
 * with progress; a download can be cancelled. The worker refuses a B that does not fit beside A
 * (the banner says both models' needs, with "Load anyway"); the B loaded before then stays.
 * A running cancellable job is cancelled first, as a load of model A does.
 * @returns whether model B is now the one asked for.
 */
export async function loadModelB(source: ModelSource, loadOptions: LoadOptions = {}): Promise<boolean> {
  const s = useStore.getState();
  const options: LoadOptions = { weightDtype: s.weightDtype, ...loadOptions };
  const label = labelOf(source);
  if (loadCancels(s.job)) void worker().cancel();
  const before = s.modelB;
  s.setModelB({ label, source, options, status: 'loading', info: null, progress: null });
  const info = await runJob('loadB', `Loading model B: ${label}`, `Could not load model B (${label})`, () =>
    inOrder((w) => w.loadModelB(source, s.backendChoice, Comlink.proxy((p: LoadProgress) => useStore.getState().modelBProgressed(p)), options)), {
    cancellable: true,
    retryFor: (e) => (e.name === 'ModelTooLargeError' ? { label: 'Load anyway', run: () => void loadModelB(source, { ...options, checkFit: false }) } : undefined),
  });
  if (!info) {
    // a load refused before the worker freed the B before it keeps that one
    const kept = await inOrder((w) => w.modelBInfo());
    useStore.getState().setModelB(kept && before?.info ? before : null);
    return false;
  }
  useStore.getState().setModelB({ label, source, options, status: 'ready', info, progress: null });
  return true;
}

/** Frees model B in the worker (model A stays); the comparison on display stays, marked as computed with a B no longer loaded. */
export async function unloadModelB(): Promise<void> {
  await inOrder((w) => w.unloadModelB());
  useStore.getState().setModelB(null);
}
