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

/**
 * One CSV cell. Numbers are written as numbers. Text that a spreadsheet would read as a formula —
 * starting with =, +, -, @, tab or carriage return (OWASP "CSV Injection") — gets a leading ' and
 * is quoted, so a token such as "=SUM(A1)" or "-1" stays text; text with a quote, comma, line break
 * or edge whitespace is quoted (RFC 4180, quotes doubled).
 */
export function csvCell(c: string | number): string {
  if (typeof c === 'number') return String(c);
  const s = /^[=+\-@\t\r]/.test(c) ? `'${c}` : c;
  return s !== c || /[",\n\r]/.test(s) || /^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** CSV text (CRLF line ends) from rows of cells; the first row is the header. Every cell goes through csvCell. */
export function csvText(rows: readonly (readonly (string | number)[])[]): string {
  return rows.map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
}

/** CSV as a download blob (see csvText). */
export function csvBlob(rows: (string | number)[][]): Blob {
  return new Blob([csvText(rows)], { type: 'text/csv' });
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
