import { useStore } from '../store';
import { loadHubModel } from '../actions/model';
import { DEFAULT_ENDPOINT } from '../../workers/shared';
import { bytes } from '../lib/format';
import { byRecency, recentModels } from '../lib/recent_models';

/** How many cached models the offer names (the cache manager lists them all). */
const SHOWN = 3;

/**
 * On start, the Hub models this browser already holds in Cache Storage (listed by CacheManager,
 * which mounts with the picker), offered for a one-click load that needs no network: the last-used
 * one first, labelled and preselected (the primary button), then the others. The loaded model is
 * not offered again.
 */
export function CachedModelOffer() {
  const models = useStore((s) => s.cachedModels);
  const busy = useStore((s) => s.job !== null);
  const loaded = useStore((s) => s.lastLoad?.source);
  const rest = (models ?? []).filter((m) => !(loaded?.kind === 'hub' && loaded.repo === m.repo && (loaded.revision ?? 'main') === m.revision && (loaded.endpoint || DEFAULT_ENDPOINT) === m.endpoint));
  const { ordered, last } = byRecency(rest, recentModels());
  const offer = ordered.slice(0, SHOWN);
  if (!offer.length) return null;
  return (
    <p className="row cached-offer" data-testid="cached-offer">
      <span className="muted">Cached in this browser (loads offline):</span>
      {offer.map((m) => (
        <button
          key={`${m.endpoint} ${m.repo}@${m.revision}`} type="button" className={m === last ? 'primary' : 'small'} disabled={busy}
          data-testid={m === last ? 'cached-offer-last' : 'cached-offer-load'}
          title={`${m.files.length} files, ${bytes(m.totalBytes)}${m.endpoint !== DEFAULT_ENDPOINT ? ` from ${m.endpoint}` : ''}`}
          onClick={() => void loadHubModel({ kind: 'hub', repo: m.repo, revision: m.revision, ...(m.endpoint !== DEFAULT_ENDPOINT ? { endpoint: m.endpoint } : {}) })}
        >
          {m === last ? `Last used: ${m.repo}@${m.revision}` : `${m.repo}@${m.revision}`}
        </button>
      ))}
    </p>
  );
}
