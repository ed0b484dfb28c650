import { useState } from 'react';
import { useStore } from '../store';
import { inOrder } from '../actions/worker';
import { formatBytes, type SizeLadder } from '../../workers/shared';
import type { ModelSource } from '../../workers/protocol';
import { labelOf } from '../actions/model';

const LABELS = { f32: 'float32', f16: 'binary16', q8_0: 'Q8_0', q4_0: 'Q4_0' } as const;

/**
 * "Will it fit?" in the load control: the size ladder of `source` (InferenceApi.sizeLadder) — bytes
 * per weight storage and the KV cache for the chosen context, against this backend's limits and
 * memory — read from config.json and the safetensors headers only, before any download. Each row
 * says whether that storage fits here and, when not, why (its title holds the whole sentence).
 * When the model chosen changes (another bundled model, a folder or Hub load) a table of the one
 * before stays on screen marked stale, naming the model it describes, until Check is pressed again.
 */
export function SizeLadderCheck({ source }: { source: ModelSource | null }) {
  const backend = useStore((s) => s.backendChoice);
  const [context, setContext] = useState(4096);
  const [ladder, setLadder] = useState<SizeLadder | null>(null);
  /** The source the shown ladder was read from (labelOf), to tell when the chosen model changed since. */
  const [checkedFor, setCheckedFor] = useState<string | null>(null);
  const chosen = source ? labelOf(source) : null;
  const stale = ladder !== null && checkedFor !== chosen;
  /** The context the shown ladder was asked for (the ladder holds the one it was sized for). */
  const [asked, setAsked] = useState(context);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const check = async () => {
    if (!source) return;
    setBusy(true);
    setError(null);
    try {
      setLadder(await inOrder((w) => w.sizeLadder(source, backend, { contextLength: context })));
      setAsked(context);
      setCheckedFor(labelOf(source));
    } catch (e) {
      setLadder(null);
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <details className="size-ladder" data-testid="size-ladder">
      <summary>Will it fit? <span className="muted">— memory per weight storage, before any download</span></summary>
      <div className="row">
        <label title="KV-cache positions (capped at the model's max_position_embeddings)">
          Context <input data-testid="fit-context" className="short" type="number" min={1} value={context} onChange={(e) => setContext(Math.max(1, Math.floor(Number(e.target.value) || 1)))} />
        </label>
        <button type="button" data-testid="fit-check" disabled={busy || !source} onClick={() => void check()}>{busy ? 'Reading headers…' : 'Check'}</button>
      </div>
      {error && <p className="error" data-testid="fit-error">{error}</p>}
      {stale && <p className="order-note" data-testid="fit-stale">Stale: this table describes {ladder.label}, not {chosen ?? 'the model chosen now'}. Press Check to size it.</p>}
      {ladder && (
        <table className={`data-table${stale ? ' stale' : ''}`} data-testid="fit-table" data-stale={stale}>
          <caption className="muted" data-testid="fit-caption">
            {ladder.label} · KV cache for {ladder.contextLength} tokens{ladder.contextLength < asked ? ` (${asked} asked: capped at the model's max_position_embeddings, ${ladder.contextLength})` : ''} · {ladder.device}
          </caption>
          <thead><tr><th>storage</th><th>weights</th><th>KV cache</th><th>activations</th><th>total</th><th>here</th></tr></thead>
          <tbody>
            {ladder.rungs.map((r) => (
              <tr key={r.weightDtype} data-testid={`fit-row-${r.weightDtype}`} data-fits={r.fits} data-total={r.estimate.totalBytes}>
                <td>{LABELS[r.weightDtype]}</td>
                <td>{formatBytes(r.estimate.weightBytes)}</td>
                <td>{formatBytes(r.estimate.kvCacheBytes)}</td>
                <td>{formatBytes(r.estimate.activationBytes)}</td>
                <td>{formatBytes(r.estimate.totalBytes)}</td>
                <td title={r.reason}>{r.fits ? 'fits' : `does not fit: ${r.reason.replace(/^[^:]*: /, '')}`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </details>
  );
}
