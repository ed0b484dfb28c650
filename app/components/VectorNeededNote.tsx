import { useState } from 'react';
import { useStore } from '../store';
import { buildDefaultAndPlace } from '../actions/steering';
import { DEFAULT_SET } from '../actions/vectors';

/**
 * Shown where a heatmap cell was clicked with an empty vector library: an `add` intervention needs a
 * vector, so nothing was placed. Offers to build the default set's CAA vector at the cell's hook and
 * place it there in one click, or to open the Vectors view (build another, or import a file).
 */
export function VectorNeededNote({ hook, row, col, token, onDone }: { hook: string; row: number; col: number; token: string; onDone: () => void }) {
  const job = useStore((s) => s.job);
  const hasVectors = useStore((s) => s.vectors.length > 0);
  const setView = useStore((s) => s.setView);
  const [building, setBuilding] = useState(false);
  if (hasVectors && !building) return null;
  const build = async () => {
    setBuilding(true);
    try {
      if ((await buildDefaultAndPlace(row, col))?.placed) onDone();
    } finally {
      setBuilding(false);
    }
  };
  return (
    <p className="warn vector-needed" role="status" data-testid="vector-needed">
      Nothing placed: steering at <span className="mono">{hook}</span>, token {col} <span className="mono">{token}</span>, adds a vector, and the library is empty.{' '}
      <button type="button" className="small" data-testid="vector-needed-build" disabled={!!job} title={job ? `waiting for: ${job.label}` : undefined} onClick={() => void build()}>
        Build happy − sad (CAA, {DEFAULT_SET.split('/').pop()}) here and place it
      </button>{' '}
      <button type="button" className="small" data-testid="vector-needed-open" onClick={() => setView('vectors')}>Build or import another (Vectors)…</button>
    </p>
  );
}
