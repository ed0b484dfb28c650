import { useState } from 'react';
import { useStore } from '../store';
import { buildDefaultAndPlace, placeAtLensCell, type LensCellPlacement } from '../actions/steering';
import { DEFAULT_SET } from '../actions/vectors';

/**
 * Shown where a heatmap cell was clicked and nothing was placed, because no library vector was built
 * at the cell's hook (the library is empty, or holds vectors from other hooks only). Offers to build
 * the default set's CAA vector at the cell's hook and place it there in one click, to place the
 * other hook's vector anyway (it says which), or to open the Vectors view (build another, or import).
 */
export function VectorNeededNote({ placement, token, onDone }: { placement: Extract<LensCellPlacement, { placed: false }>; token: string; onDone: () => void }) {
  const { hook, row, col } = placement;
  const job = useStore((s) => s.job);
  const setView = useStore((s) => s.setView);
  const [building, setBuilding] = useState(false);
  // a vector built (or imported) since the click answers the note
  const answered = useStore((s) => s.vectors.some((v) => v.hook === hook) || (placement.reason === 'empty' && s.vectors.length > 0));
  if (answered && !building) return null;
  const build = async () => {
    setBuilding(true);
    try {
      if ((await buildDefaultAndPlace(row, col))?.placed) onDone();
    } finally {
      setBuilding(false);
    }
  };
  const why = placement.reason === 'empty'
    ? 'adds a vector, and the library is empty.'
    : <>adds a vector, and none in the library was built at this hook (CAA directions differ between layers).</>;
  return (
    <p className="warn vector-needed" role="status" data-testid="vector-needed" data-reason={placement.reason}>
      Nothing placed: steering at <span className="mono">{hook}</span>, token {col} <span className="mono">{token}</span>, {why}{' '}
      <button type="button" className="small" data-testid="vector-needed-build" disabled={!!job || building} title={job ? `waiting for: ${job.label}` : undefined} onClick={() => void build()}>
        Build happy − sad (CAA, {DEFAULT_SET.split('/').pop()}) here and place it
      </button>{' '}
      {placement.reason === 'other-hook' && (
        <>
          <button type="button" className="small" data-testid="vector-needed-anyway" onClick={() => { if (placeAtLensCell(row, col, true).placed) onDone(); }}>
            Place “{placement.fallback.name}” (built at <span className="mono">{placement.fallback.hook ?? 'an unknown hook'}</span>) anyway
          </button>{' '}
        </>
      )}
      <button type="button" className="small" data-testid="vector-needed-open" onClick={() => setView('vectors')}>Build or import another (Vectors)…</button>
    </p>
  );
}
