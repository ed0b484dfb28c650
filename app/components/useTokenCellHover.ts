import { useState } from 'react';
import { useStore } from '../store';
import type { Cell } from './Heatmap';

/**
 * Hover state for a layer × token heatmap: the last cell pointed at stays selected (the readout
 * keeps showing it), and its column highlights the same token on the token strip.
 */
export function useTokenCellHover(): [Cell | null, (c: Cell | null) => void] {
  const [hover, setHover] = useState<Cell | null>(null);
  const setFocusPosition = useStore((s) => s.setFocusPosition);
  const point = (c: Cell | null) => {
    if (!c) return;
    setHover(c);
    setFocusPosition(c.col);
  };
  return [hover, point];
}
