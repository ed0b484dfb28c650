/** Exports of a view's data and pixels (JSON, CSV, PNG), as browser downloads. */

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

/** A colour scale to draw under an exported picture. */
export interface LegendSpec {
  color: (v: number) => string;
  domain: [number, number];
  title: string;
}

/** An SVG element drawn onto a canvas at the device pixel ratio (white background). */
async function svgCanvas(svg: SVGSVGElement, dpr: number): Promise<HTMLCanvasElement> {
  const { width, height } = svg.getBoundingClientRect();
  const clone = svg.cloneNode(true) as SVGSVGElement;
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  clone.setAttribute('width', String(width));
  clone.setAttribute('height', String(height));
  const style = getComputedStyle(svg);
  clone.style.fontFamily = style.fontFamily;
  clone.style.fontSize = style.fontSize;
  const url = URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(clone)], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = Math.ceil(width * dpr);
    canvas.height = Math.ceil(height * dpr);
    const ctx = canvas.getContext('2d')!;
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    return canvas;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * A figure as PNG: caption lines above the picture (a canvas or an SVG chart) and, when given, the
 * colour scale below it, so the file explains itself away from the page.
 */
export async function figurePng(picture: HTMLCanvasElement | SVGSVGElement, caption: readonly string[], legend?: LegendSpec): Promise<Blob> {
  const dpr = window.devicePixelRatio || 1;
  const img = picture instanceof HTMLCanvasElement ? picture : await svgCanvas(picture, dpr);
  const w = img.width / dpr, h = img.height / dpr;
  const pad = 12, line = 20, legendH = legend ? 56 : 0;
  const width = Math.max(w, 420) + 2 * pad;
  const height = pad + caption.length * line + 6 + h + legendH + pad;
  const out = document.createElement('canvas');
  out.width = Math.ceil(width * dpr);
  out.height = Math.ceil(height * dpr);
  const ctx = out.getContext('2d')!;
  ctx.scale(dpr, dpr);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = '#1f2328';
  ctx.textBaseline = 'top';
  caption.forEach((text, i) => {
    ctx.font = `${i === 0 ? '600 15px' : '13px'} system-ui, sans-serif`;
    ctx.fillText(text, pad, pad + i * line, width - 2 * pad);
  });
  const top = pad + caption.length * line + 6;
  ctx.drawImage(img, pad, top, w, h);
  if (legend) {
    const y = top + h + 8, barW = 300, [lo, hi] = legend.domain;
    ctx.font = '12px system-ui, sans-serif';
    ctx.fillStyle = '#57606a';
    ctx.fillText(legend.title, pad, y);
    for (let i = 0; i < barW; i++) {
      ctx.fillStyle = legend.color(lo + ((hi - lo) * (i + 0.5)) / barW);
      ctx.fillRect(pad + i, y + 16, 1.5, 14);
    }
    ctx.fillStyle = '#1f2328';
    ctx.textAlign = 'left';
    ctx.fillText(String(+lo.toFixed(3)).replace('-', '−'), pad, y + 34);
    ctx.textAlign = 'right';
    ctx.fillText(String(+hi.toFixed(3)).replace('-', '−'), pad + barW, y + 34);
  }
  return canvasPng(out);
}
