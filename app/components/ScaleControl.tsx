import { useMemo } from 'react';
import { interpolateOranges, scaleSequential } from 'd3';
import { useStore } from '../store';
import { divergingScale, rangeNote, symmetricRange, type HeatmapScale } from '../lib/color_scale';

/** A heatmap's colour scale as the views draw it: the colour of a value, its domain and what sets the range. */
export interface HeatmapColour {
  color: (v: number) => string;
  domain: [number, number];
  /** "scale ±1.23: 98th percentile of |Δ|; 3 of 120 cells beyond it drawn in the end colours" */
  note: string;
}

/**
 * The colour scale of a heatmap under the experiment's colour-scale setting (`view.heatmapScale`,
 * one setting for every heatmap): for signed values the diverging RdBu over [−m, m]
 * (color_scale.ts divergingScale), for non-negative values (SAE activations) a sequential Oranges
 * over [0, m]; m from symmetricRange (robust 98th percentile of |v|, or the largest |v|).
 * @param values any layout, e.g. row-major [n_layers, n_positions]
 * @param what the value's symbol in the note ("Δ", "r")
 */
export function useHeatmapColour(values: ArrayLike<number>, what: string, kind: 'signed' | 'nonnegative' = 'signed'): HeatmapColour {
  const mode = useStore((s) => s.heatmapScale);
  return useMemo(() => {
    const range = symmetricRange(values, mode);
    const note = rangeNote(range, mode, what);
    if (kind === 'nonnegative') return { color: scaleSequential(interpolateOranges).domain([0, range.m]).clamp(true), domain: [0, range.m], note };
    return { color: divergingScale(range.m), domain: [-range.m, range.m], note };
  }, [values, mode, what, kind]);
}

/** The colour-scale control shown beside each heatmap: robust percentile or the largest |value| (one setting for every heatmap, saved with the experiment). */
export function ScaleControl({ what, testId = 'heatmap-scale' }: { what: string; testId?: string }) {
  const mode = useStore((s) => s.heatmapScale);
  const setMode = useStore((s) => s.setHeatmapScale);
  return (
    <label className="toggle" title="One setting for every heatmap; saved with the experiment">Colour scale
      <select data-testid={testId} value={mode} onChange={(e) => setMode(e.target.value as HeatmapScale)}>
        <option value="robust">robust (98th percentile of |{what}|)</option>
        <option value="max">largest |{what}|</option>
      </select>
    </label>
  );
}
