import { test, expect, type Page } from '@playwright/test';
import { open, settled } from './app_page';

/**
 * Drag and drop (issue 29): files dropped anywhere on the page go where they belong, through the
 * pickers' code (app/actions/drop.ts; the decision: tests/unit/drop_kind.test.ts): an experiment
 * file restores its prompt, a vector file joins the library on the Vectors tab, and junk is refused
 * with a banner while the experiment stays as it was.
 */

/** Drops files (name, MIME type, bytes) on the page's element `selector` through a synthetic DataTransfer. */
async function drop(page: Page, selector: string, files: { name: string; type: string; bytes: number[] }[]) {
  await page.locator(selector).evaluate((el, fs) => {
    const dt = new DataTransfer();
    for (const f of fs) dt.items.add(new File([new Uint8Array(f.bytes)], f.name, { type: f.type }));
    el.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    el.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, files);
}

/** A float32 .npy of shape [n] (NumPy format 1.0: magic, version, little-endian header length, padded header). */
function npy(values: number[]): number[] {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${values.length},), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const out = new Uint8Array(10 + header.length + 4 * values.length);
  out.set([0x93, ...Buffer.from('NUMPY'), 1, 0, header.length & 255, header.length >> 8]);
  out.set(Buffer.from(header, 'latin1'), 10);
  new Float32Array(out.buffer, 10 + header.length).set(values);
  return Array.from(out);
}

test('an experiment file dropped on the page restores it; a vector file dropped joins the library; junk is refused and changes nothing', async ({ page }) => {
  await open(page);
  const saved = JSON.parse(await page.evaluate(() => localStorage.getItem('branchpoint.experiment') ?? '{}'));
  expect(saved.format).toBe('branchpoint-experiment');
  const prompt = 'Once upon a time, there was a little cat who';
  await drop(page, '.tabs', [{ name: 'my.json', type: 'application/json', bytes: Array.from(Buffer.from(JSON.stringify({ ...saved, prompt }))) }]);
  await expect(page.getByTestId('prompt')).toHaveValue(prompt, { timeout: 60_000 });
  await settled(page);

  await drop(page, '[data-testid="prompt"]', [{ name: 'drift.npy', type: 'application/octet-stream', bytes: npy(Array.from({ length: 64 }, (_, i) => Math.sin(i))) }]);
  await expect(page.getByTestId('tab-vectors')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('vector-library')).toContainText('drift.npy', { timeout: 60_000 });
  await expect(page.getByTestId('library-row-0')).toHaveAttribute('data-d', '64');
  await settled(page);

  await drop(page, 'header.top', [{ name: 'notes.txt', type: 'text/plain', bytes: Array.from(Buffer.from('hello')) }]);
  await expect(page.getByTestId('error-what')).toHaveText('Could not open the dropped files');
  await expect(page.getByTestId('error-why')).toContainText('files ending .txt are not taken here');
  await expect(page.getByTestId('prompt')).toHaveValue(prompt);
});
