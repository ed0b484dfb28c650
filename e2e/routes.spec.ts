import { test, expect, type Locator } from '@playwright/test';
import * as fs from 'node:fs';
import { parseShown } from './golden';
import { settled } from './app_page';
import { parseCsv, save } from './export_files';
import { withMoeFixture } from './moe_fixture';

/**
 * The Expert routes tab on mixtral-tiny (../shared/fixtures-moe, picked as a local folder from a
 * temporary copy): the tab appears for a model with routers, the routing map and the route margin
 * grid are drawn, clicking a grid cell bans that expert as an intervention and runs again, and the
 * margin moves by what the cell said (read from the JSON export before the click); CSV export.
 */
const SHOTS = '.artifacts/screenshots';

/** The pixel centre of cell (row, col) of a Heatmap from its data attributes. */
async function cellAt(map: Locator, row: number, col: number): Promise<{ x: number; y: number }> {
  const g = await map.evaluate((el) => ({ ...(el as HTMLElement).dataset }));
  const r = g.rowsUpward === 'true' ? Number(g.rows) - 1 - row : row;
  return { x: Number(g.x0) + (col + 0.5) * Number(g.cellWidth), y: Number(g.y0) + (r + 0.5) * Number(g.cellHeight) };
}

test('mixtral-tiny: routing map and route margin grid; a banned expert moves the margin by its cell; export', async ({ page }) => {
  test.setTimeout(180_000);
  fs.mkdirSync(SHOTS, { recursive: true });
  await withMoeFixture(page, 'mixtral', async (load) => {
    await expect(page.getByTestId('tab-routes')).toHaveCount(0); // a dense model: no routers, no tab
    await load();
    await page.getByTestId('prompt').fill('The quick brown fox');
    await page.getByTestId('good-future').fill(' jumps');
    await page.getByTestId('bad-future').fill(' runs');
    await page.getByTestId('tab-routes').click();
    await page.getByTestId('run-routes').click();
    await settled(page);
    const view = page.getByTestId('routes-view');
    await expect(page.getByTestId('routes-map')).toBeVisible();
    await expect(page.getByTestId('routes-margin-grid')).toBeVisible();
    await expect(page.getByTestId('routes-caption')).toContainText('3 sparse layers of 3 · 4 experts, top-2');

    // hover the map: the router's distribution at that cell
    const map = page.getByTestId('routes-map');
    await map.hover({ position: await cellAt(map, 2, 1) });
    await expect(page.getByTestId('routes-readout')).toHaveAttribute('data-layer', '2');
    await expect(page.getByTestId('routes-readout-dist').locator('tr')).toHaveCount(4);

    // the grid's numbers, from the JSON export
    const json = JSON.parse((await save(page, view, 'JSON')).bytes.toString('utf8')) as { margin: number; routeMargin: number[]; nExperts: number; tokens: string[] };
    const E = json.nExperts;
    let best = 0;
    json.routeMargin.forEach((v, i) => { if (Math.abs(v) > Math.abs(json.routeMargin[best])) best = i; });
    const [l, e] = [Math.floor(best / E), best % E];
    expect(Math.abs(json.routeMargin[best])).toBeGreaterThan(1e-3);
    expect(parseShown(await page.getByTestId('routes-margin').textContent())).toBeCloseTo(json.margin, 3);
    await page.screenshot({ path: `${SHOTS}/routes-mixtral.png`, fullPage: true });

    const grid = page.getByTestId('routes-margin-grid');
    await grid.click({ position: await cellAt(grid, l, e) });
    await expect(page.getByTestId('routes-applied')).toBeVisible({ timeout: 120_000 });
    await settled(page);
    await expect(page.getByTestId('routes-applied')).toContainText(`Banned e${e} at L${l}`);
    const after = parseShown(await page.getByTestId('routes-applied-margin').textContent());
    expect(after - json.margin).toBeCloseTo(json.routeMargin[best], 3);
    await expect(page.getByTestId('intervention-list')).toContainText(`blocks.${l}.mlp.hook_router_logits`);

    const csv = parseCsv((await save(page, view, 'CSV')).bytes.toString('utf8'));
    expect(csv[0]).toEqual(['layer', 'position', 'token', 'experts (descending weight)', 'weights']);
    expect(csv.length - 1).toBe(3 * json.tokens.length); // one row per sparse layer and token
    await expect(grid).toHaveAttribute('data-marked-cells', `${l}:${e}`);
    await page.screenshot({ path: `${SHOTS}/routes-banned.png`, fullPage: true });

    // the sweep (with the ban above on), then its worst mask applied: the margin moves by the mask's margin change
    await page.getByTestId('routes-sweep-masks').fill('6');
    await page.getByTestId('run-routes-sweep').click();
    await settled(page);
    await expect(page.getByTestId('routes-sweep-hist')).toBeVisible();
    await expect(page.getByTestId('routes-sweep-worst')).toContainText('Worst mask');
    await page.getByTestId('routes-apply-worst').click();
    await expect(page.getByTestId('routes-applied')).toContainText('Applied the worst mask', { timeout: 120_000 });
    await settled(page);
    const applied = page.getByTestId('routes-applied');
    expect(Number(await applied.getAttribute('data-change'))).toBeCloseTo(Number(await applied.getAttribute('data-predicted')), 4);
    await page.screenshot({ path: `${SHOTS}/routes-sweep.png`, fullPage: true });
  });
});
