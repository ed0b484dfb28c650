import { test, expect } from '@playwright/test';
import { open, settled, buildCaa } from './app_page';
import { save } from './export_files';

/**
 * Interventions and the runs they change, as a user meets them: one added before any vector
 * exists picks up the vector built afterwards, and the batch study says plainly that it runs under
 * the enabled interventions (a notice naming each, a tag on the results, the JSON export's
 * `interventions`), and stops saying so once they are switched off.
 */
const SHOTS = '.artifacts/screenshots';

test('an intervention added before its vector follows the library; the batch study names the interventions it runs under', async ({ page }) => {
  await open(page);
  await page.getByTestId('add-intervention').click();
  await expect(page.getByTestId('intervention-1-no-vector')).toBeVisible();

  await buildCaa(page);
  await expect(page.getByTestId('intervention-1-no-vector')).toHaveCount(0);
  await expect(page.getByTestId('intervention-1')).toContainText('CAA happy vs sad');

  await page.getByTestId('tab-batch').click();
  const notice = page.getByTestId('batch-steering-notice');
  await expect(notice).toContainText(/Runs under 1 intervention: #1 add α = 1 of “CAA happy vs sad.*” at blocks\.3\.hook_resid_post/);
  await page.screenshot({ path: `${SHOTS}/batch-steering-notice.png` });

  await page.getByTestId('run-batch').click();
  await settled(page);
  await expect(page.getByTestId('batch-steered-tag')).toContainText('#1');
  const json = JSON.parse((await save(page, page.getByTestId('batch-view'), 'JSON')).bytes.toString('utf8'));
  expect(json.interventions).toHaveLength(1);
  expect(json.interventions[0]).toMatchObject({ n: 1, draft: { type: 'add', hook: 'blocks.3.hook_resid_post', dose: 1 } });
  expect(json.interventions[0].text).toContain('CAA happy vs sad');

  await page.getByTestId('intervention-1-enabled').uncheck();
  await expect(notice).toHaveCount(0);
});
