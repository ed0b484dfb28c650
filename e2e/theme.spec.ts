import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import { open, analysed, settled } from './app_page';
import { parseSvg, save } from './export_files';

/**
 * Dark theme: follows prefers-color-scheme until the user picks one, which is remembered; the chrome
 * turns dark while figures stay on light plates, and exports stay printable (white background, dark
 * text) whatever the theme. Screenshots of both themes for a person to look at.
 */
const SHOTS = '.artifacts/screenshots';

/** Relative luminance (WCAG 2) of a CSS rgb()/rgba() colour. */
function luminance(css: string): number {
  const [r, g, b] = (css.match(/[\d.]+/g) ?? ['0', '0', '0']).slice(0, 3).map((v) => Number(v) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const contrast = (a: string, b: string) => { const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const styleOf = (page: Page, selector: string) => page.locator(selector).first().evaluate((el) => { const cs = getComputedStyle(el); return { color: cs.color, background: cs.backgroundColor }; });

test('the theme follows the system until picked, is remembered, keeps figures on light plates and exports printable', async ({ page }) => {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.emulateMedia({ colorScheme: 'dark' });
  await open(page);
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await expect(page.getByTestId('theme')).toHaveValue('auto');
  await page.emulateMedia({ colorScheme: 'light' });
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');

  await page.getByTestId('theme').selectOption('dark');
  await page.reload();
  await settled(page);
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await expect(page.getByTestId('theme')).toHaveValue('dark');
  const body = await page.locator('body').evaluate((el) => getComputedStyle(el.parentElement!).backgroundColor);
  expect(luminance(body), 'dark page').toBeLessThan(0.05);
  const prompt = await styleOf(page, '[data-testid="prompt"]');
  expect(contrast(prompt.color, prompt.background), 'prompt text contrast (WCAG AA ≥ 4.5)').toBeGreaterThanOrEqual(4.5);

  await page.getByTestId('analyse').click();
  await analysed(page);
  await page.screenshot({ path: `${SHOTS}/theme-dark-1280x800.png` });
  // A chart on screen sits on a light plate with dark text.
  await page.getByTestId('tab-sinks').click();
  const plate = await page.locator('.sink-view svg.chart, [data-testid="sink-view"] svg.chart').first().evaluate((el) => ({ bg: getComputedStyle(el).backgroundColor, text: getComputedStyle(el.querySelector('text')!).fill }));
  expect(luminance(plate.bg), 'chart plate is light').toBeGreaterThan(0.9);
  expect(contrast(plate.text, plate.bg), 'chart text on its plate').toBeGreaterThanOrEqual(4.5);
  await page.screenshot({ path: `${SHOTS}/theme-dark-sinks-1280x800.png` });

  // The export from the dark theme: white background, every text fill dark.
  const svg = (await save(page, page.getByTestId('sink-view'), 'SVG')).bytes.toString('utf8');
  const parsed = await parseSvg(page, svg, 'text', ['fill']);
  expect(parsed.error).toBeNull();
  expect(svg).toContain('<rect width="100%" height="100%" fill="#ffffff"/>');
  const fills = await page.evaluate((fs) => fs.map((f) => { const c = document.createElement('canvas').getContext('2d')!; c.fillStyle = f || '#000'; c.fillRect(0, 0, 1, 1); const d = c.getImageData(0, 0, 1, 1).data; return `rgb(${d[0]}, ${d[1]}, ${d[2]})`; }), parsed.items.map(([f]) => f));
  for (const f of fills) expect(contrast(f, 'rgb(255, 255, 255)'), `exported text fill ${f} on white`).toBeGreaterThanOrEqual(3);

  await page.getByTestId('theme').selectOption('light');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  await page.getByTestId('tab-margins').click();
  await page.screenshot({ path: `${SHOTS}/theme-light-1280x800.png` });
});
