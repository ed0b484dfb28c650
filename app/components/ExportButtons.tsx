import { useState } from 'react';
import { csvBlob, download, figurePng, jsonBlob, svgBlob } from '../lib/export';
import { buildFigureSvg, type FigureSpec } from '../lib/figure';

export interface ExportButtonsProps {
  /** File name stem ("margins-stories260K"). */
  name: string;
  json: () => unknown;
  /** Header row first; each header says what the value is and its units ("steered − unsteered Δ (nats)"). */
  csv: () => (string | number)[][];
  /** What the view plots (title, caption, panels, colour scales): saved as SVG and as PNG at 2× and 4×. */
  figure?: () => FigureSpec | null;
}

/** PNG scales offered: 2× for slides and screens, 4× for print. */
const SCALES = [2, 4] as const;

/**
 * The export bar every view carries: its data as JSON and CSV, its figure as SVG (vector, text as
 * text, heatmap cells as rects holding their values) and as PNG at 2× and 4×, all from one
 * FigureSpec, so the files match and nothing is clipped.
 *
 * A view adopts it in one element:
 * ```tsx
 * <ExportButtons name={`my-view-${model}`} json={() => result} csv={() => [['layer', 'Δ (nats)'], ...rows]}
 *   figure={() => ({ title, caption: [what is compared, model, prompt], panels: [{ kind: 'svg', element: svg.current! }] })} />
 * ```
 * (`kind: 'heatmap'` panels take the values, labels and colour scale instead of an element.) A
 * failure to encode is shown beside the buttons, never thrown.
 */
export function ExportButtons({ name, json, csv, figure }: ExportButtonsProps) {
  const [problem, setProblem] = useState<string | null>(null);
  const save = async (kind: 'svg' | 2 | 4) => {
    const spec = figure?.();
    if (!spec) return;
    try {
      const fig = buildFigureSvg(spec);
      download(kind === 'svg' ? `${name}.svg` : `${name}@${kind}x.png`, kind === 'svg' ? svgBlob(fig) : await figurePng(fig, kind));
      setProblem(null);
    } catch (e) {
      setProblem(`Could not export the figure: ${(e as Error).message}`);
    }
  };
  return (
    <span className="export" aria-label="export">
      <button type="button" className="small" onClick={() => download(`${name}.json`, jsonBlob(json()))}>JSON</button>
      <button type="button" className="small" onClick={() => download(`${name}.csv`, csvBlob(csv()))}>CSV</button>
      {figure && (
        <>
          <button type="button" className="small" onClick={() => void save('svg')}>SVG</button>
          {SCALES.map((s) => <button key={s} type="button" className="small" title={`PNG at ${s}× the on-screen size`} onClick={() => void save(s)}>PNG {s}×</button>)}
        </>
      )}
      {problem && <span className="export-problem" role="status">{problem}</span>}
    </span>
  );
}
