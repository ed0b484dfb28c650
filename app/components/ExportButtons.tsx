import { useState } from 'react';
import { csvBlob, download, figurePng, jsonBlob, type LegendSpec } from '../lib/export';

export interface ExportButtonsProps {
  /** File name stem ("margins-stories260K"). */
  name: string;
  json: () => unknown;
  csv: () => (string | number)[][];
  /** The picture to save as PNG: a canvas, or an SVG chart. */
  picture?: () => HTMLCanvasElement | SVGSVGElement | null;
  /** Lines written above the picture in the PNG (title first). */
  caption?: readonly string[];
  /** The colour scale drawn under the picture in the PNG. */
  legend?: LegendSpec;
}

/** Small buttons that save a view's data (JSON, CSV) and picture (PNG, with its caption and colour scale). */
export function ExportButtons({ name, json, csv, picture, caption = [], legend }: ExportButtonsProps) {
  const [problem, setProblem] = useState<string | null>(null);
  const png = async () => {
    const el = picture?.();
    if (!el) return;
    try {
      download(`${name}.png`, await figurePng(el, caption, legend));
      setProblem(null);
    } catch (e) {
      setProblem((e as Error).message);
    }
  };
  return (
    <span className="export" aria-label="export">
      <button type="button" className="small" onClick={() => download(`${name}.json`, jsonBlob(json()))}>JSON</button>
      <button type="button" className="small" onClick={() => download(`${name}.csv`, csvBlob(csv()))}>CSV</button>
      {picture && <button type="button" className="small" onClick={() => void png()}>PNG</button>}
      {problem && <span className="export-problem" role="status">{problem}</span>}
    </span>
  );
}
