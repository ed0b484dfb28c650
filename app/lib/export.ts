/** Exports of a view's data (JSON, CSV) and figure (SVG, PNG at a chosen scale), as browser downloads. */
import type { BuiltFigure } from './figure';

/** Saves a blob under a file name. */
export function download(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** JSON, with typed arrays written as plain arrays. */
export function jsonBlob(data: unknown): Blob {
  const text = JSON.stringify(data, (_k, v: unknown) => (ArrayBuffer.isView(v) && !(v instanceof DataView) ? Array.from(v as unknown as ArrayLike<number>) : v), 2);
  return new Blob([text], { type: 'application/json' });
}

/** CSV (RFC 4180 quoting) from rows of cells; the first row is the header. */
export function csvBlob(rows: (string | number)[][]): Blob {
  const cell = (c: string | number) => {
    const s = String(c);
    return /[",\n\r]/.test(s) || /^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return new Blob([rows.map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n'], { type: 'text/csv' });
}

/** A canvas as PNG. @throws Error when the browser cannot encode it. */
export function canvasPng(canvas: HTMLCanvasElement): Promise<Blob> {
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('the canvas could not be encoded as PNG'))), 'image/png'));
}

/** A laid-out figure (figure.ts buildFigureSvg) as an SVG file. */
export function svgBlob(fig: BuiltFigure): Blob {
  return new Blob([fig.svg], { type: 'image/svg+xml' });
}

/**
 * A laid-out figure rasterised at `scale` (2 or 4 for print): a PNG of exactly
 * ceil(scale·width) × ceil(scale·height) pixels, white background.
 * @throws Error when the browser cannot decode the SVG or encode the PNG.
 */
export async function figurePng(fig: BuiltFigure, scale: number): Promise<Blob> {
  const url = URL.createObjectURL(svgBlob(fig));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = Math.ceil(fig.width * scale);
    canvas.height = Math.ceil(fig.height * scale);
    const ctx = canvas.getContext('2d')!;
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await canvasPng(canvas);
  } finally {
    URL.revokeObjectURL(url);
  }
}
