import { expect, type Page, type Locator } from '@playwright/test';
import * as fs from 'node:fs';

/**
 * Reading back what a view exports, as a user's tools would (one copy for every export spec): the
 * saved file of an export button, a PNG's pixel size, RFC 4180 CSV, an SVG parsed by the browser's
 * XML parser, and float32 `.npy` files parsed here independently of the app's writer.
 */

/** Clicks an export button of a view (by its accessible name: "SVG", "CSV", "PNG 2×") and returns the saved file's bytes and name. */
export async function save(page: Page, view: Locator, name: string): Promise<{ bytes: Buffer; file: string }> {
  const [dl] = await Promise.all([page.waitForEvent('download'), view.getByRole('button', { name, exact: true }).first().click()]);
  return { bytes: fs.readFileSync(await dl.path()), file: dl.suggestedFilename() };
}

/** Width and height from a PNG's IHDR chunk (after checking the PNG signature). */
export function pngSize(b: Buffer): { width: number; height: number } {
  expect(b.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

/** RFC 4180 CSV (quoted fields, doubled quotes, CRLF) into rows of strings. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [], cell = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (ch === '"') quoted = false; else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') { row.push(cell); cell = ''; } else if (ch === '\n') { row.push(cell.replace(/\r$/, '')); rows.push(row); row = []; cell = ''; } else cell += ch;
  }
  return rows;
}

export interface ParsedSvg {
  /** The XML parser's complaint, or null when the file parses. */
  error: string | null;
  width: number;
  height: number;
  /** Every <text>'s content, in document order. */
  texts: string[];
  /** The requested attributes of every element matching the selector. */
  items: string[][];
  /** <image> and <foreignObject> elements (a vector export has none). */
  images: number;
}

/** Parses an SVG in the page (the browser's XML parser) and returns its size, texts and the named attributes of every match of `selector`. */
export async function parseSvg(page: Page, svg: string, selector: string, attrs: string[]): Promise<ParsedSvg> {
  return page.evaluate(({ svg, selector, attrs }) => {
    const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
    const err = doc.querySelector('parsererror');
    const root = doc.documentElement;
    return {
      error: err ? err.textContent : null,
      width: Number(root.getAttribute('width')), height: Number(root.getAttribute('height')),
      texts: Array.from(root.querySelectorAll('text'), (t) => t.textContent ?? ''),
      items: Array.from(root.querySelectorAll(selector), (e) => attrs.map((a) => e.getAttribute(a) ?? '')),
      images: root.querySelectorAll('image, foreignObject').length,
    };
  }, { svg, selector, attrs });
}

/**
 * A view's figure as a user saves it: the SVG parses, holds no bitmaps and has a title; the PNG at
 * `scale` is exactly ceil(scale·width) × ceil(scale·height) of that SVG. The SVG is also written to
 * `shots/<name>.svg` and the PNG beside it, for a person to open.
 * @returns the parsed SVG with the attributes `attrs` of every `selector` match
 */
export async function savedFigure(page: Page, view: Locator, name: string, selector: string, attrs: string[], opts: { shots?: string; scale?: 2 | 4 } = {}): Promise<ParsedSvg> {
  const scale = opts.scale ?? 2;
  const svg = (await save(page, view, 'SVG')).bytes.toString('utf8');
  const parsed = await parseSvg(page, svg, selector, attrs);
  expect(parsed.error, `${name}: the SVG parses`).toBeNull();
  expect(parsed.images, `${name}: vector only, no embedded bitmaps`).toBe(0);
  expect(parsed.texts.length, `${name}: text stays text`).toBeGreaterThan(0);
  const png = await save(page, view, `PNG ${scale}×`);
  expect(png.file).toMatch(new RegExp(`@${scale}x\\.png$`));
  expect(pngSize(png.bytes), `${name}: PNG ${scale}× of the SVG's size`).toEqual({ width: Math.ceil(parsed.width * scale), height: Math.ceil(parsed.height * scale) });
  if (opts.shots) {
    fs.mkdirSync(opts.shots, { recursive: true });
    fs.writeFileSync(`${opts.shots}/export-${name}.svg`, svg);
    fs.writeFileSync(`${opts.shots}/export-${name}@${scale}x.png`, png.bytes);
  }
  return parsed;
}

/** A view's CSV export, parsed: the header row and the data rows. */
export async function savedCsv(page: Page, view: Locator): Promise<{ header: string[]; rows: string[][] }> {
  const [header, ...rows] = parseCsv((await save(page, view, 'CSV')).bytes.toString('utf8'));
  return { header, rows };
}

/** A float32 little-endian C-order .npy file (format 1.0–3.0) as its shape and values. */
export function readNpy(b: Buffer): { shape: number[]; data: Float32Array } {
  expect(b.subarray(0, 6).toString('latin1')).toBe('\x93NUMPY');
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.subarray(start, start + hlen).toString('latin1');
  expect(header).toContain("'descr': '<f4'");
  expect(header).toContain("'fortran_order': False");
  const shape = /'shape': \(([^)]*)\)/.exec(header)![1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const off = start + hlen;
  expect(off % 64, 'numpy aligns the data to 64 bytes').toBe(0);
  const n = shape.reduce((a, c) => a * c, 1);
  expect(b.length - off).toBe(4 * n);
  return { shape, data: new Float32Array(b.buffer.slice(b.byteOffset + off, b.byteOffset + off + 4 * n)) };
}

/** Expects two lists of numbers to agree element-wise within `tol` (relative to max(1, |b|)), naming the first mismatch. */
export function expectClose(a: readonly number[], b: readonly number[], tol: number, what: string): void {
  expect(a.length, `${what}: count`).toBe(b.length);
  a.forEach((v, i) => expect(Math.abs(v - b[i]), `${what} [${i}]: ${v} vs ${b[i]}`).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(b[i]))));
}
