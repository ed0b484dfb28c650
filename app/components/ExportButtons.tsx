import { useState } from 'react';
import { canvasPng, csvBlob, download, jsonBlob, svgPng } from '../lib/export';

export interface ExportButtonsProps {
  /** File name stem ("margins-stories260K"). */
  name: string;
  json: () => unknown;
  csv: () => (string | number)[][];
  /** The picture to save as PNG: a canvas, or an SVG chart. */
  picture?: () => HTMLCanvasElement | SVGSVGElement | null;
}

/** Small buttons that save a view's data (JSON, CSV) and picture (PNG). */
export function ExportButtons({ name, json, csv, picture }: ExportButtonsProps) {
  const [problem, setProblem] = useState<string | null>(null);
  const png = async () => {
    const el = picture?.();
    if (!el) return;
    try {
      download(`${name}.png`, el instanceof HTMLCanvasElement ? await canvasPng(el) : await svgPng(el));
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
