import { useStore } from '../store';
import type { CachedModel } from '../../workers/protocol';
import { inOrder, messageOf } from './worker';

/** Lists the Hub models in Cache Storage into the store (the cache manager reads it); a failure shows in the banner. */
export async function refreshCachedModels(): Promise<void> {
  try {
    useStore.getState().setCachedModels(await inOrder((w) => w.cachedModels()));
  } catch (e) {
    useStore.getState().setFailure({ what: 'Could not list the cached models', why: messageOf(e) });
  }
}

/** Deletes one cached model (its files and manifest, at its endpoint only), then lists the cache again. */
export async function deleteCachedModel(m: CachedModel): Promise<void> {
  try {
    await inOrder((w) => w.deleteCachedModel(m.repo, m.revision, m.endpoint));
  } catch (e) {
    useStore.getState().setFailure({ what: `Could not delete ${m.repo}@${m.revision} from the cache`, why: messageOf(e) });
  }
  await refreshCachedModels();
}
