import { useEffect, useState } from 'react';
import { useStore } from '../store';
import { deleteCachedModel, refreshCachedModels } from '../actions/cache';
import { DEFAULT_ENDPOINT } from '../../workers/shared';
import { bytes } from '../lib/format';
import type { CachedModel } from '../../workers/protocol';

/**
 * The Hub models this browser keeps in Cache Storage: repo@revision (and the mirror, when not
 * huggingface.co), file count and size, with Delete per model and the total. Listed on mount;
 * Hub loads and deletes list it again (actions/cache.ts).
 */
export function CacheManager() {
  const models = useStore((s) => s.cachedModels);
  const busy = useStore((s) => s.job !== null);
  const [deleting, setDeleting] = useState(false);
  useEffect(() => {
    void refreshCachedModels();
  }, []);

  const total = models?.reduce((sum, m) => sum + m.totalBytes, 0) ?? 0;
  const remove = async (m: CachedModel) => {
    setDeleting(true);
    await deleteCachedModel(m);
    setDeleting(false);
  };

  return (
    <section className="cache-manager" data-testid="cache-manager" aria-label="cached models">
      <div className="row">
        <h3>Cached in this browser</h3>
        <span className="muted" data-testid="cache-total" data-bytes={total}>
          {models === null ? 'listing…' : `${models.length} ${models.length === 1 ? 'model' : 'models'}, ${bytes(total)}`}
        </span>
        <button type="button" className="small" data-testid="cache-refresh" onClick={() => void refreshCachedModels()}>Refresh</button>
      </div>
      {models?.length === 0 && (
        <p className="hint" data-testid="cache-empty">No models yet. A Hub model is kept here after its first download and then loads offline.</p>
      )}
      {!!models?.length && (
        <table className="cache-list">
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col" className="num">Files</th>
              <th scope="col" className="num">Size</th>
              <th scope="col"><span className="visually-hidden">Delete</span></th>
            </tr>
          </thead>
          <tbody>
            {models.map((m) => {
              const id = `${m.repo}@${m.revision}`;
              return (
                <tr key={`${m.endpoint} ${id}`} data-testid="cache-row" data-repo={m.repo} data-revision={m.revision} data-bytes={m.totalBytes}>
                  <th scope="row">
                    <span className="mono">{id}</span>
                    {m.endpoint !== DEFAULT_ENDPOINT && <span className="muted" data-testid="cache-endpoint"> from {m.endpoint}</span>}
                  </th>
                  <td className="num" data-testid="cache-files" title={m.files.map((f) => `${f.path} (${bytes(f.bytes)})`).join('\n')}>{m.files.length}</td>
                  <td className="num" data-testid="cache-size">{bytes(m.totalBytes)}</td>
                  <td>
                    <button type="button" className="small" data-testid="cache-delete" disabled={busy || deleting} aria-label={`Delete ${id} from the cache`} onClick={() => void remove(m)}>Delete</button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
