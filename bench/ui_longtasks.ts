/**
 * UI responsiveness while streaming: builds the production site (vite build into
 * .artifacts/bench/ui-dist), serves it as a static host does (tools/static_server.ts), opens it in
 * headless Chromium (WebGPU on SwiftShader), lets the bundled stories260K load, generates
 * `--tokens` tokens (128 by default) and reports the page's main-thread long tasks
 * (PerformanceObserver 'longtask': tasks over 50 ms) between the click and the last token on screen:
 * how many, the longest, their total, and the tokens per second seen by the user, then each Long
 * Animation Frame with blocking time in that window and the scripts ≥ 5 ms in it (Chromium's
 * 'long-animation-frame' attribution). Long tasks of the start-up (page load up to the Generation tab)
 * are counted apart. One run, with the load average printed beside each figure.
 *
 *   npx tsx bench/ui_longtasks.ts [--tokens 128] [--runs 3] [--no-build]
 */
import { chromium } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveStatic } from '../tools/static_server';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, '.artifacts', 'bench', 'ui-dist');
const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const TOKENS = Number(flag('tokens', '128'));
const RUNS = Number(flag('runs', '3'));
const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;

if (!args.includes('--no-build')) {
  console.log(`building the production site into ${path.relative(ROOT, OUT)} …`);
  execFileSync('npx', ['vite', 'build', '--outDir', OUT, '--emptyOutDir'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}
const site = await serveStatic(OUT, '/');
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true,
  args: ['--enable-unsafe-webgpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-sandbox'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.addInitScript(() => {
    type Frame = { start: number; duration: number; blocking: number; scripts: { ms: number; invoker: string; source: string }[] };
    const w = window as unknown as { __longTasks: { start: number; duration: number }[]; __frames: Frame[] };
    w.__longTasks = [];
    w.__frames = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) w.__longTasks.push({ start: e.startTime, duration: e.duration }); }).observe({ type: 'longtask', buffered: true });
    // Long Animation Frames (Chromium ≥ 123): which scripts ran in a frame over 50 ms.
    try {
      new PerformanceObserver((list) => {
        for (const e of list.getEntries() as unknown as { startTime: number; duration: number; blockingDuration: number; scripts: { duration: number; invoker: string; sourceURL: string; sourceFunctionName: string; sourceCharPosition: number }[] }[]) {
          w.__frames.push({ start: e.startTime, duration: e.duration, blocking: e.blockingDuration, scripts: e.scripts.map((x) => ({ ms: x.duration, invoker: x.invoker, source: `${x.sourceFunctionName || '?'}@${x.sourceURL.split('/').pop()}:${x.sourceCharPosition}` })) });
        }
      }).observe({ type: 'long-animation-frame', buffered: true });
    } catch { /* older Chromium: long tasks only */ }
  });
  await page.goto(site.url);
  await page.getByTestId('backend-badge').waitFor({ timeout: 180_000 });
  await page.getByTestId('tab-generation').click();
  await page.getByTestId('generate').waitFor({ state: 'visible' });
  const badge = (await page.getByTestId('backend-badge').textContent())?.trim();
  console.log(`UI long tasks while streaming ${TOKENS} tokens · production build · ${badge} · ${load()}`);
  const startup = await page.evaluate(() => (window as unknown as { __longTasks: { duration: number }[] }).__longTasks.map((t) => t.duration));
  console.log(`start-up (page load to the Generation tab, not streaming): ${startup.length} tasks > 50 ms, longest ${Math.max(0, ...startup).toFixed(0)} ms   (${load()})`);
  await page.getByTestId('max-new-tokens').fill(String(TOKENS));
  for (let run = 0; run < RUNS; run++) {
    await page.waitForFunction(() => !(document.querySelector('[data-testid="generate"]') as HTMLButtonElement | null)?.disabled, undefined, { timeout: 60_000 });
    // React sets data-done again only when the new run's value changes, so the old run's 'true' cannot end the wait.
    const t0 = await page.evaluate(() => { document.querySelector('[data-testid="generation-output"]')?.removeAttribute('data-done'); return performance.now(); });
    await page.getByTestId('generate').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="generation-output"]')?.getAttribute('data-done') === 'true', undefined, { timeout: 600_000, polling: 'raf' });
    const r = await page.evaluate((start) => {
      const end = performance.now();
      const w = window as unknown as { __longTasks: { start: number; duration: number }[]; __frames: { start: number; duration: number; blocking: number; scripts: { ms: number; invoker: string; source: string }[] }[] };
      const tasks = w.__longTasks.filter((t) => t.start >= start);
      const frames = w.__frames.filter((f) => f.start >= start && f.blocking > 0).map((f) => ({ at: f.start - start, ms: f.duration, blocking: f.blocking, scripts: f.scripts.filter((x) => x.ms >= 5).map((x) => `${x.invoker} → ${x.source} ${x.ms.toFixed(0)} ms`) }));
      return { ms: end - start, n: tasks.length, worst: Math.max(0, ...tasks.map((t) => t.duration)), total: tasks.reduce((s, t) => s + t.duration, 0), tokens: document.querySelectorAll('[data-testid="generated-token"]').length, frames };
    }, t0);
    console.log(`run ${run + 1}: ${r.tokens} tokens in ${r.ms.toFixed(0)} ms (${(r.tokens / r.ms * 1e3).toFixed(0)} tok/s on screen): ${r.n} main-thread tasks > 50 ms, longest ${r.worst.toFixed(0)} ms, ${r.total.toFixed(0)} ms in them   (${load()})`);
    for (const f of r.frames) console.log(`   long animation frame at +${f.at.toFixed(0)} ms: ${f.ms.toFixed(0)} ms (blocking ${f.blocking.toFixed(0)} ms)${f.scripts.length ? `: ${f.scripts.join('; ')}` : ': no script ≥ 5 ms (style, layout, paint or GC)'}`);
  }
} finally {
  await browser.close();
  await site.close();
}
