import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CSP } from '../tools/csp';
import { sharedPath } from '../tests/shared';
import { analyseWith } from './app_page';

/**
 * Issue #8 hygiene: the built site runs under a Content-Security-Policy (and still loads its model,
 * its worker and WebGPU or the CPU fallback, and analyses); the servers answer a malformed
 * %-escape with 400, not 500; the dev server does not serve files of the repository's parent folder
 * through /@fs/.
 */
const REPO = path.resolve(fileURLToPath(new URL('..', import.meta.url)));

test('the built site runs under its CSP: the bundled model loads in the worker and Analyse works, with no policy violation', async ({ page }) => {
  const violations: string[] = [];
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => { (window as unknown as { __csp: string[] }).__csp = [...((window as unknown as { __csp?: string[] }).__csp ?? []), `${e.violatedDirective} ${e.blockedURI}`]; });
  });
  await page.goto('/index.html');
  const meta = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
  expect(meta).toBe(CSP);
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await analyseWith(page, { prompt: 'Once upon a time there was a girl', good: ' who', bad: ' and' });
  const pageViolations = await page.evaluate(() => (window as unknown as { __csp?: string[] }).__csp ?? []);
  expect(pageViolations, 'CSP violations while loading and analysing').toEqual([]);
  expect(violations).toEqual([]);
  // the policy is in force: an injected inline script does not run (DevTools' own evaluate is exempt, so test a page script)
  const ran = await page.evaluate(async () => {
    const s = document.createElement('script');
    s.textContent = 'window.__inlineRan = true';
    document.head.append(s);
    await new Promise((r) => setTimeout(r, 50));
    return (window as unknown as { __inlineRan?: boolean }).__inlineRan === true;
  });
  expect(ran, 'an inline script ran despite script-src').toBe(false);
});

test('a malformed %-escape under /models/ is a 400 (preview and dev), and /@fs/ does not read the parent folder', async ({ request }) => {
  const dev = `http://127.0.0.1:${process.env.BP_DEV_PORT}`;
  for (const base of ['', dev]) {
    const r = await request.get(`${base}/models/%E0%A4%A`);
    expect(r.status(), `${base || 'preview'} /models/%E0%A4%A`).toBe(400);
  }
  const parentFile = path.join(path.dirname(REPO), path.basename(REPO), 'package.json'); // inside: allowed
  const inside = await request.get(`${dev}/@fs${parentFile}`);
  expect(inside.status(), '/@fs/ inside the repo').toBe(200);
  // a file that exists in the parent folder (a file that does not exist would fall through to the
  // SPA's index.html with 200, so the check needs one that is really there): a marker written beside
  // the checkout, or ../shared's DESIGN.md where the parent folder is read-only
  const marker = path.join(path.dirname(REPO), `.bp-hygiene-${process.pid}-${Date.now()}.txt`);
  let outsideFile = marker;
  let secret = 'bp-hygiene-marker-must-not-be-served';
  try { fs.writeFileSync(marker, secret); } catch { outsideFile = sharedPath('DESIGN.md'); secret = fs.readFileSync(outsideFile, 'utf8').slice(0, 60); }
  try {
    const outside = await request.get(`${dev}/@fs${outsideFile}`);
    expect(outside.status(), `/@fs/ of ${outsideFile} (outside the repo)`).toBe(403);
    expect(await outside.text()).not.toContain(secret);
    const etc = await request.get(`${dev}/@fs/etc/passwd`);
    expect(etc.status(), '/@fs/etc/passwd').toBe(403);
  } finally {
    if (outsideFile === marker) fs.rmSync(marker, { force: true });
  }
});
