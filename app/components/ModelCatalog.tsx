import type { CatalogEntry } from '../../workers/protocol';
import { bytes, paramCount } from '../lib/format';

interface Props {
  /** The curated list (workers/engine/io/catalog.ts), in display order. */
  entries: readonly CatalogEntry[];
  /** Load buttons off (a job is running). */
  disabled: boolean;
  /** The user chose an entry. */
  onChoose: (entry: CatalogEntry) => void;
}

/**
 * The curated Hub models as a table: parameters, approximate download, licence, and whether the
 * repo is gated (an access token is needed) or instruction-tuned (chat template).
 */
export function ModelCatalog({ entries, disabled, onChoose }: Props) {
  return (
    <table className="catalog" data-testid="catalog">
      <caption>Curated models <span className="muted">— sizes are approximate; the exact size is checked before the weights download</span></caption>
      <thead>
        <tr>
          <th scope="col">Model</th>
          <th scope="col" className="num">Parameters</th>
          <th scope="col" className="num">Download</th>
          <th scope="col">Licence</th>
          <th scope="col">Notes</th>
          <th scope="col"><span className="visually-hidden">Load</span></th>
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => (
          <tr key={e.repo} data-testid="catalog-row" data-repo={e.repo} data-gated={e.gated} data-chat={e.chat}>
            <th scope="row">
              {e.label} <a className="mono repo" href={`https://huggingface.co/${e.repo}`} target="_blank" rel="noreferrer">{e.repo}</a>
            </th>
            <td className="num" data-testid="catalog-params">{paramCount(e.params)}</td>
            <td className="num" data-testid="catalog-bytes">≈ {bytes(e.approxBytes)}</td>
            <td className="mono" data-testid="catalog-licence">{e.licence}</td>
            <td>
              {e.gated && <span className="tag tag-gated" data-testid="catalog-gated" title="Accept the licence on the repo's Hub page, then paste an access token">gated · token</span>}
              {e.chat && <span className="tag tag-chat" title="Instruction-tuned: the chat template is switched on after loading">chat</span>}
            </td>
            <td>
              <button type="button" className="small" data-testid="catalog-load" disabled={disabled} aria-label={`Load ${e.label}`} onClick={() => onChoose(e)}>Load</button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
