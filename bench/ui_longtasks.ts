/**
 * UI responsiveness while streaming: builds the production site (vite build into
 * .artifacts/bench/ui-dist), serves it as a static host does (tools/static_server.ts), opens it in
 * headless Chromium (WebGPU on SwiftShader), lets the bundled stories260K load, generates
 * `--tokens` tokens (128 by default) `--runs` times and reports the page's main-thread long tasks
 * (PerformanceObserver 'longtask': tasks over 50 ms) between the click and the last token on screen:
 * how many, the longest, their total, and the tokens per second seen by the user, then each Long
 * Animation Frame with blocking time in that window and the scripts ≥ 5 ms in it (Chromium's
 * 'long-animation-frame' attribution). Long tasks of the start-up (page load up to the Generation
 * tab) are counted apart, with the time from navigation to the model ready (Generate enabled).
 * `--loads N` repeats it all in N fresh browsers (no GPU-process pipeline or shader cache carried
 * over), so the first generation after a load is measured N times; a summary compares first and
 * later generations. Every figure has the load average beside it.
 *
 * `--cpu` also records a Chromium trace ('toplevel' category) of each generation and splits the
 * main thread's tasks over 50 ms wall into those with over 50 ms of main-thread CPU (the page's own
 * work) and those with less (the thread was runnable but not scheduled: other processes, or the
 * GPU process compiling pipelines, had the cores), and prints the GPU process main thread's CPU
 * (where WebGPU commands and pipeline compiles run).
 * `--site DIR` serves a site built before (e.g. a copy of main's) instead of building, to compare two
 * builds under the same load.
 *
 *   npx tsx bench/ui_longtasks.ts [--tokens 128] [--runs 3] [--loads 1] [--cpu] [--no-build | --site DIR]
 */
import { chromium } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveStatic } from '../tools/static_server';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const OUT = path.resolve(flag('site', path.join(ROOT, '.artifacts', 'bench', 'ui-dist')));
const TOKENS = Number(flag('tokens', '128'));
const RUNS = Number(flag('runs', '3'));
const LOADS = Number(flag('loads', '1'));
const CPU = args.includes('--cpu');
const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;

interface Run { load: number; run: number; tasks: number; worst: number; total: number; loadAvg: number; cpu?: TraceCpu }
/**
 * From a trace of one generation: main-thread tasks over 50 ms wall, those over 50 ms CPU, the most
 * CPU in one of them, the most CPU in any main-thread task (long or not: the page's own work, what
 * the UI code controls), and the GPU main thread's CPU ms.
 */
interface TraceCpu { long: number; longCpu: number; worstCpu: number; maxTaskCpu: number; gpuMainCpu: number }

/**
 * Reads a Chromium JSON trace: top-level tasks (RunTask events not nested in another on the same
 * thread; `dur` wall and `tdur` thread-CPU µs) of the renderer main thread and the GPU main thread.
 */
function traceCpu(json: string): TraceCpu {
  type Ev = { ph?: string; name?: string; pid: number; tid: number; ts: number; dur?: number; tdur?: number; args?: { name?: string } };
  const evs = (JSON.parse(json) as { traceEvents: Ev[] }).traceEvents;
  const names = new Map(evs.filter((e) => e.ph === 'M' && e.name === 'thread_name').map((e) => [`${e.pid}:${e.tid}`, e.args?.name ?? '']));
  const top = new Map<string, Ev[]>();
  for (const e of evs.filter((x) => x.ph === 'X' && x.dur !== undefined && /^(ThreadControllerImpl::)?RunTask$/.test(x.name ?? '')).sort((a, b) => a.ts - b.ts)) {
    const k = `${e.pid}:${e.tid}`;
    const list = top.get(k) ?? [];
    const last = list[list.length - 1];
    if (!last || e.ts >= last.ts + last.dur!) list.push(e);
    top.set(k, list);
  }
  const tasksOf = (thread: string) => [...top.entries()].filter(([k]) => names.get(k) === thread).flatMap(([, l]) => l);
  const all = tasksOf('CrRendererMain');
  const main = all.filter((e) => e.dur! > 50e3);
  return {
    maxTaskCpu: Math.max(0, ...all.map((e) => (e.tdur ?? 0) / 1e3)),
    long: main.length,
    longCpu: main.filter((e) => (e.tdur ?? 0) > 50e3).length,
    worstCpu: Math.max(0, ...main.map((e) => (e.tdur ?? 0) / 1e3)),
    gpuMainCpu: tasksOf('CrGpuMain').reduce((s, e) => s + (e.tdur ?? 0), 0) / 1e3,
  };
}
interface Frame { start: number; duration: number; blocking: number; scripts: { ms: number; invoker: string; source: string }[] }
type Observed = { __longTasks: { start: number; duration: number }[]; __frames: Frame[] };

/** One fresh browser: page load to the model ready, then RUNS generations; returns each generation's long tasks. */
async function oneLoad(url: string, loadNo: number): Promise<{ runs: Run[]; readyMs: number }> {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true,
    args: ['--enable-unsafe-webgpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-sandbox'],
  });
  const runs: Run[] = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.addInitScript(() => {
      const w = window as unknown as Observed;
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
    const t0 = Date.now();
    await page.goto(url);
    await page.getByTestId('backend-badge').waitFor({ timeout: 180_000 });
    await page.getByTestId('tab-generation').click();
    await page.getByTestId('generate').waitFor({ state: 'visible' });
    const enabled = () => page.waitForFunction(() => !(document.querySelector('[data-testid="generate"]') as HTMLButtonElement | null)?.disabled, undefined, { timeout: 180_000 });
    await enabled();
    const readyMs = Date.now() - t0;
    const badge = (await page.getByTestId('backend-badge').textContent())?.trim();
    console.log(`load ${loadNo}: UI long tasks while streaming ${TOKENS} tokens · production build · ${badge} · ${load()}`);
    const startup = await page.evaluate(() => (window as unknown as Observed).__longTasks.map((t) => t.duration));
    console.log(`start-up: model ready (Generate enabled) ${readyMs} ms after navigation; ${startup.length} tasks > 50 ms, longest ${Math.max(0, ...startup).toFixed(0)} ms   (${load()})`);
    await page.getByTestId('max-new-tokens').fill(String(TOKENS));
    for (let run = 0; run < RUNS; run++) {
      await enabled();
      // React sets data-done again only when the new run's value changes, so the old run's 'true' cannot end the wait.
      const start = await page.evaluate(() => { document.querySelector('[data-testid="generation-output"]')?.removeAttribute('data-done'); return performance.now(); });
      if (CPU) await browser.startTracing(page, { categories: ['toplevel'] });
      await page.getByTestId('generate').click();
      await page.waitForFunction(() => document.querySelector('[data-testid="generation-output"]')?.getAttribute('data-done') === 'true', undefined, { timeout: 600_000, polling: 'raf' });
      const cpu = CPU ? traceCpu((await browser.stopTracing()).toString('utf8')) : undefined;
      const r = await page.evaluate((start) => {
        const end = performance.now();
        const w = window as unknown as Observed;
        const tasks = w.__longTasks.filter((t) => t.start >= start);
        const frames = w.__frames.filter((f) => f.start >= start && f.blocking > 0).map((f) => ({ at: f.start - start, ms: f.duration, blocking: f.blocking, scripts: f.scripts.filter((x) => x.ms >= 5).map((x) => `${x.invoker} → ${x.source} ${x.ms.toFixed(0)} ms`) }));
        return { ms: end - start, n: tasks.length, worst: Math.max(0, ...tasks.map((t) => t.duration)), total: tasks.reduce((s, t) => s + t.duration, 0), tokens: document.querySelectorAll('[data-testid="generated-token"]').length, frames };
      }, start);
      runs.push({ load: loadNo, run: run + 1, tasks: r.n, worst: r.worst, total: r.total, loadAvg: os.loadavg()[0], cpu });
      console.log(`run ${run + 1}: ${r.tokens} tokens in ${r.ms.toFixed(0)} ms (${(r.tokens / r.ms * 1e3).toFixed(0)} tok/s on screen): ${r.n} main-thread tasks > 50 ms, longest ${r.worst.toFixed(0)} ms, ${r.total.toFixed(0)} ms in them   (${load()})`);
      if (cpu) console.log(`   trace: ${cpu.long} main-thread tasks > 50 ms wall, ${cpu.longCpu} of them > 50 ms CPU (most CPU in one: ${cpu.worstCpu.toFixed(0)} ms); most CPU in any main-thread task ${cpu.maxTaskCpu.toFixed(0)} ms; GPU process main thread ${cpu.gpuMainCpu.toFixed(0)} ms CPU`);
      for (const f of r.frames) console.log(`   long animation frame at +${f.at.toFixed(0)} ms: ${f.ms.toFixed(0)} ms (blocking ${f.blocking.toFixed(0)} ms)${f.scripts.length ? `: ${f.scripts.join('; ')}` : ': no script ≥ 5 ms (style, layout, paint, GC, or the main thread not scheduled)'}`);
    }
    return { runs, readyMs };
  } finally {
    await browser.close();
  }
}

if (!args.includes('--no-build') && !args.includes('--site')) {
  console.log(`building the production site into ${path.relative(ROOT, OUT)} …`);
  execFileSync('npx', ['vite', 'build', '--outDir', OUT, '--emptyOutDir'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}
const site = await serveStatic(OUT, '/');
const all: Run[] = [];
const ready: number[] = [];
try {
  for (let l = 1; l <= LOADS; l++) {
    const { runs, readyMs } = await oneLoad(site.url, l);
    all.push(...runs);
    ready.push(readyMs);
  }
} finally {
  await site.close();
}
const line = (rs: Run[]) => rs.map((r) => `${r.tasks} (longest ${r.worst.toFixed(0)} ms${r.cpu ? `; ${r.cpu.longCpu} > 50 ms CPU, max task CPU ${r.cpu.maxTaskCpu.toFixed(0)} ms, GPU main ${r.cpu.gpuMainCpu.toFixed(0)} ms CPU` : ''}; load ${r.loadAvg.toFixed(2)})`).join(', ');
console.log(`\nsummary over ${LOADS} load(s) of ${path.relative(ROOT, OUT)}, ${TOKENS} tokens per generation:`);
console.log(`  model ready after navigation: ${ready.map((ms) => `${ms} ms`).join(', ')}`);
console.log(`  first generation after load, tasks > 50 ms: ${line(all.filter((r) => r.run === 1))}`);
if (RUNS > 1) console.log(`  later generations, tasks > 50 ms:           ${line(all.filter((r) => r.run > 1))}`);
console.log(`  (${load()})`);
