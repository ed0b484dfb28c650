/**
 * Where the main thread's time goes in the UI's longest tasks while streaming: serves a production
 * build (`--site DIR`; build it with `npx vite build --minify false --outDir DIR` so function and
 * component names survive), loads the bundled stories260K in headless Chromium (WebGPU on
 * SwiftShader) and records a Chromium trace (categories toplevel, devtools.timeline and the V8
 * sampling profiler) of each of `--runs` generations of `--tokens` tokens. For the `--top` renderer
 * main-thread tasks with the most thread CPU it prints: wall and CPU ms, the time in each kind of
 * work Chromium names (script, style, layout, paint, GC), the functions with the most self time and
 * the React components (PascalCase functions) with the most inclusive time (V8 samples, 100 µs
 * apart by default). The load average is printed beside each generation.
 *
 * The Generate click's task and (first generation) the task that puts the first token on screen
 * are found by performance marks and always detailed.
 * It also lists every task with at least `--list` ms of CPU (8 by default), in order, split into
 * script, style, layout, paint and GC. `--no-samples` leaves the V8 sampler out (it slows the
 * page's script a little): the task list only.
 *
 *   npx tsx bench/ui_profile.ts --site DIR [--tokens 128] [--runs 2] [--top 2] [--list 8] [--no-samples]
 */
import { chromium } from '@playwright/test';
import * as os from 'node:os';
import * as path from 'node:path';
import { serveStatic } from '../tools/static_server';

const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const SITE = flag('site', '');
const TOKENS = Number(flag('tokens', '128'));
const RUNS = Number(flag('runs', '2'));
const TOP = Number(flag('top', '2'));
const LIST = Number(flag('list', '8'));
const SAMPLES = !args.includes('--no-samples');
const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;
if (!SITE) throw new Error('--site DIR is required (a production build, ideally with --minify false)');

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface Node { id: number; parent?: number; callFrame: CallFrame }
type Ev = { ph: string; name: string; cat: string; pid: number; tid: number; ts: number; dur?: number; tdur?: number; id?: string; args?: { name?: string; data?: { startTime?: number; cpuProfile?: { nodes?: Node[]; samples?: number[] }; timeDeltas?: number[] } } };

/** Samples (time µs in the trace clock, leaf node id) and the call tree of the V8 profile of thread pid:tid. */
function samplesOf(evs: Ev[], pid: number, tid: number) {
  const nodes = new Map<number, Node>();
  const samples: { ts: number; node: number }[] = [];
  const profiles = evs.filter((e) => e.name === 'Profile' && e.pid === pid && e.tid === tid);
  for (const p of profiles) {
    let t = p.args!.data!.startTime!;
    for (const c of evs.filter((e) => e.name === 'ProfileChunk' && e.pid === pid && e.id === p.id)) {
      for (const n of c.args?.data?.cpuProfile?.nodes ?? []) nodes.set(n.id, n);
      const s = c.args?.data?.cpuProfile?.samples ?? [];
      const d = c.args?.data?.timeDeltas ?? [];
      for (let i = 0; i < s.length; i++) { t += d[i]; samples.push({ ts: t, node: s[i] }); }
    }
  }
  return { nodes, samples: samples.sort((a, b) => a.ts - b.ts) };
}

const where = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${path.basename(f.url ?? "") || "-"}${f.url ? `:${f.lineNumber + 1}` : ''}`;
const top = (m: Map<string, number>, n: number) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${v.toFixed(1)} ms ${k}`);

function report(json: string) {
  const evs = (JSON.parse(json) as { traceEvents: Ev[] }).traceEvents;
  const main = evs.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain' && evs.some((x) => (SAMPLES ? x.name === 'Profile' : x.name === 'FireAnimationFrame') && x.pid === e.pid && x.tid === e.tid));
  if (!main) throw new Error('no renderer main thread with a V8 profile in the trace');
  const mine = evs.filter((e) => e.pid === main.pid && e.tid === main.tid && e.ph === 'X' && e.dur !== undefined).sort((a, b) => a.ts - b.ts);
  const tasks: Ev[] = [];
  for (const e of mine.filter((x) => /^(ThreadControllerImpl::)?RunTask$/.test(x.name))) {
    const last = tasks[tasks.length - 1];
    if (!last || e.ts >= last.ts + last.dur!) tasks.push(e);
  }
  const { nodes, samples } = samplesOf(evs, main.pid, main.tid);
  const t0 = tasks[0]?.ts ?? 0;
  // Every task over --list ms of CPU, in order: where it falls and what kind of work it was.
  const kindsOf = (t: Ev) => {
    const sum = (re: RegExp) => mine.filter((e) => e.ts >= t.ts && e.ts < t.ts + t.dur! && re.test(e.name)).reduce((a, e) => a + (e.tdur ?? e.dur!) / 1e3, 0);
    return `script ${sum(/^(FunctionCall|EvaluateScript|v8\.run)$/).toFixed(1)}, style ${sum(/^UpdateLayoutTree$/).toFixed(1)}, layout ${sum(/^Layout$/).toFixed(1)}, paint ${sum(/^(Paint|PrePaint|Layerize)$/).toFixed(1)}, GC ${sum(/^(MajorGC|MinorGC)$/).toFixed(1)}`;
  };
  const listed = tasks.filter((t) => (t.tdur ?? 0) / 1e3 >= LIST);
  console.log(`  ${listed.length} of ${tasks.length} main-thread tasks with ≥ ${LIST} ms CPU:`);
  for (const t of listed) console.log(`    +${((t.ts - t0) / 1e3).toFixed(0)} ms: ${(t.dur! / 1e3).toFixed(1)} ms wall, ${((t.tdur ?? 0) / 1e3).toFixed(1)} ms CPU (${kindsOf(t)})`);
  // The tasks the page marked (performance.mark, see below): the Generate click and the first token on screen.
  const marked = new Map<Ev, string>();
  for (const m of evs.filter((e) => e.pid === main.pid && e.tid === main.tid && (e.name === 'generate-click' || e.name === 'first-token'))) {
    const t = tasks.find((x) => m.ts >= x.ts && m.ts <= x.ts + x.dur!);
    if (t) marked.set(t, m.name);
  }
  for (const [t, name] of marked) console.log(`  ${name}: task at +${((t.ts - t0) / 1e3).toFixed(0)} ms, ${(t.dur! / 1e3).toFixed(1)} ms wall, ${((t.tdur ?? 0) / 1e3).toFixed(1)} ms CPU (${kindsOf(t)})`);
  const detailed = [...new Set([...marked.keys(), ...[...tasks].sort((a, b) => (b.tdur ?? 0) - (a.tdur ?? 0)).slice(0, TOP)])];
  for (const t of SAMPLES ? detailed : []) {
    const end = t.ts + t.dur!;
    console.log(`  task at +${((t.ts - t0) / 1e3).toFixed(0)} ms${marked.has(t) ? ` (${marked.get(t)})` : ''}: ${(t.dur! / 1e3).toFixed(1)} ms wall, ${((t.tdur ?? 0) / 1e3).toFixed(1)} ms CPU`);
    const kinds = new Map<string, number>();
    for (const e of mine) if (e.ts >= t.ts && e.ts < end && e !== t && !/RunTask|ThreadController|SequenceManager|TaskAnnotator|Scheduler|ThreadPool/.test(e.name)) {
      const k = `${e.name}`;
      kinds.set(k, (kinds.get(k) ?? 0) + (e.tdur ?? e.dur!) / 1e3);
    }
    console.log(`    by kind (CPU ms, nested kinds counted in each):\n      ${top(kinds, 25).join('\n      ')}`);
    const self = new Map<string, number>();
    const incl = new Map<string, number>();
    const inTask = samples.filter((s) => s.ts >= t.ts && s.ts < end);
    for (let i = 0; i < inTask.length; i++) {
      const dt = ((inTask[i + 1]?.ts ?? end) - inTask[i].ts) / 1e3;
      const leaf = nodes.get(inTask[i].node)!;
      self.set(where(leaf.callFrame), (self.get(where(leaf.callFrame)) ?? 0) + dt);
      const seen = new Set<string>();
      for (let n: Node | undefined = leaf; n; n = n.parent !== undefined ? nodes.get(n.parent) : undefined) {
        const f = n.callFrame.functionName;
        if (!/^[A-Z][A-Za-z0-9]*$/.test(f) || seen.has(f)) continue;
        seen.add(f);
        incl.set(f, (incl.get(f) ?? 0) + dt);
      }
    }
    console.log(`    self time (samples):\n      ${top(self, 18).join('\n      ')}`);
    console.log(`    components (inclusive):\n      ${top(incl, 20).join('\n      ')}`);
  }
}

const site = await serveStatic(path.resolve(SITE), '/');
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true,
  args: ['--enable-unsafe-webgpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-sandbox'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(site.url);
  await page.getByTestId('backend-badge').waitFor({ timeout: 180_000 });
  await page.getByTestId('tab-generation').click();
  const enabled = () => page.waitForFunction(() => !(document.querySelector('[data-testid="generate"]') as HTMLButtonElement | null)?.disabled, undefined, { timeout: 180_000 });
  await enabled();
  await page.getByTestId('max-new-tokens').fill(String(TOKENS));
  for (let run = 1; run <= RUNS; run++) {
    await enabled();
    await page.evaluate(() => document.querySelector('[data-testid="generation-output"]')?.removeAttribute('data-done'));
    await page.evaluate(() => {
      addEventListener('submit', () => performance.mark('generate-click'), { capture: true, once: true });
      const seen = new MutationObserver(() => {
        if (!document.querySelector('[data-testid="generated-token"]')) return;
        performance.mark('first-token');
        seen.disconnect();
      });
      // Marked on the first generation only (later ones replace tokens already on screen).
      if (!document.querySelector('[data-testid="generated-token"]')) seen.observe(document.body, { childList: true, subtree: true });
    });
    await browser.startTracing(page, { categories: ['blink.user_timing', 'toplevel', 'devtools.timeline', 'v8', 'disabled-by-default-devtools.timeline', ...(SAMPLES ? ['disabled-by-default-v8.cpu_profiler'] : [])] });
    await page.getByTestId('generate').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="generation-output"]')?.getAttribute('data-done') === 'true', undefined, { timeout: 600_000, polling: 'raf' });
    const json = (await browser.stopTracing()).toString('utf8');
    console.log(`\ngeneration ${run} (${TOKENS} tokens, ${SITE}): ${load()}`);
    report(json);
  }
} finally {
  await browser.close();
  await site.close();
}
