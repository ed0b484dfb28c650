import { expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SHARED } from './golden';
import { open, settled } from './app_page';

/** The files of a fixture in ../shared/fixtures-moe the app's folder picker loads (the reference/ folder stays behind). */
const FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];

/**
 * The MoE specs' start (one copy): copies ../shared/fixtures-moe/<arch>-tiny's model files into a
 * fresh temporary folder named `<arch>-tiny` (picked as a local folder, as a user would), opens the
 * app at 1280×800 and runs `body` with `load`, which picks the folder and waits until the model is
 * loaded and nothing runs. The temporary folder is removed afterwards, whether `body` passed or not.
 */
export async function withMoeFixture(page: Page, arch: 'mixtral' | 'qwen2_moe' | 'olmoe', body: (load: () => Promise<void>) => Promise<void>): Promise<void> {
  const name = `${arch}-tiny`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-moe-'));
  const folder = path.join(dir, name);
  fs.mkdirSync(folder);
  for (const f of FILES) fs.copyFileSync(path.join(SHARED, 'fixtures-moe', name, f), path.join(folder, f));
  try {
    await page.setViewportSize({ width: 1280, height: 800 });
    await open(page);
    await body(async () => {
      await page.getByTestId('folder-input').setInputFiles(folder);
      await expect(page.getByTestId('model-info')).toContainText(name, { timeout: 120_000 });
      await settled(page);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
