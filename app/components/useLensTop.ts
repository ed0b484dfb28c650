import { useEffect, useState } from 'react';
import type { LensTopTokens } from '../../workers/protocol';
import { lensTop } from '../actions/lens';
import { messageOf } from '../actions/worker';
import type { Cell } from './Heatmap';

/** What the readout shows for a cell's lens top tokens: loading (null), the tokens, or why not. */
export type LensTopState = { cell: string; top: LensTopTokens } | { cell: string; error: string } | null;

/**
 * The lens top tokens of the cell pointed at, fetched from the worker when the cell (or the
 * analysis) changes; a reply for a cell the pointer has left is dropped.
 */
export function useLensTop(handle: number, cell: Cell | null): LensTopState {
  const [state, setState] = useState<LensTopState>(null);
  const row = cell?.row ?? -1, col = cell?.col ?? -1;
  const key = `${handle}:${row}:${col}`;
  useEffect(() => {
    if (row < 0) return;
    let live = true;
    lensTop(handle, row, col).then(
      (top) => { if (live) setState({ cell: key, top }); },
      (e) => { if (live) setState({ cell: key, error: messageOf(e) }); },
    );
    return () => { live = false; };
  }, [handle, row, col, key]);
  return state && state.cell === key ? state : null;
}
