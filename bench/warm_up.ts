/**
 * What the load's pipeline warm-up (workers/engine/model/warm_up.ts, Engine.load's warmUp, set by
 * the UI's worker) costs and saves, on WebGPU in Node (npm `webgpu` = Dawn; it compiles pipelines
 * in this process, so process CPU time counts the compile): --reps times, alternating, a fresh
 * backend loads the model without and with the warm-up, then generates --tokens tokens twice
 * (greedy, from a 5-token prompt). For each phase: wall ms and this process's CPU ms, and the
 * pipelines compiled in it; medians and the with/without ratios. CPU ms is the figure to read on
 * a loaded machine (wall time there mostly measures the other processes). Every line carries the
 * load average. Model: the bundled stories260K (public/models/), or --model DIR (e.g. the
 * 135M-shaped random Llama that bench/smollm_random.ts writes). For Chromium's compiler, run with
 * VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json (SwiftShader, as in the browser).
 *
 *   npx tsx bench/warm_up.ts [--reps 3] [--tokens 128] [--model DIR]
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { nodeAdapter, nodeBackend } from '../tests/gpu/node_webgpu';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const REPS = Number(flag('reps', '3'));
const TOKENS = Number(flag('tokens', '128'));
const DIR = path.resolve(flag('model', path.join(ROOT, 'public', 'models', 'stories260K')));
const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

interface Phase { wall: number; cpu: number; pipelines: number }
const PHASES = ['load', 'first generation', 'second generation'] as const;

/** Wall and process CPU ms of body, and the pipelines it compiled. */
async function timed(count: () => number, body: () => Promise<unknown>): Promise<Phase> {
  const n0 = count(), c0 = process.cpuUsage(), t0 = performance.now();
  await body();
  const c = process.cpuUsage(c0);
  return { wall: performance.now() - t0, cpu: (c.user + c.system) / 1e3, pipelines: count() - n0 };
}

const adapter = await nodeAdapter();
if (typeof adapter === 'string') throw new Error(`no WebGPU adapter in Node: ${adapter}`);
console.log(`warm-up at load · ${path.relative(ROOT, DIR)} · ${TOKENS} tokens per generation · ${adapter.description} · ${load()}`);
const results: Record<'without' | 'with', Phase[][]> = { without: [], with: [] };
for (let rep = 0; rep < REPS; rep++) {
  for (const mode of ['without', 'with'] as const) {
    const b = await nodeBackend();
    const count = () => b.pipelineKeys.length;
    let e: Engine | null = null;
    const phases = [await timed(count, async () => { e = await Engine.load(new NodeFiles(DIR), b, undefined, { warmUp: mode === 'with' }); })];
    try {
      for (let g = 0; g < 2; g++) phases.push(await timed(count, () => e!.generate({ prompt: 'Once upon a time', good: { ids: [[0]] }, bad: { ids: [[1]] }, maxNewTokens: TOKENS, stopAtEos: false })));
    } finally {
      (e as Engine | null)?.dispose();
    }
    results[mode].push(phases);
    console.log(`rep ${rep + 1} ${mode.padEnd(7)} warm-up: ${phases.map((p, i) => `${PHASES[i]} ${p.wall.toFixed(0)} ms wall, ${p.cpu.toFixed(0)} ms CPU, ${p.pipelines} pipelines`).join(' · ')}   (${load()})`);
  }
}
console.log(`\nmedians over ${REPS} reps (with / without warm-up):`);
for (let i = 0; i < PHASES.length; i++) {
  const m = (mode: 'with' | 'without', k: 'wall' | 'cpu') => median(results[mode].map((r) => r[i][k]));
  console.log(`  ${PHASES[i].padEnd(17)} wall ${m('without', 'wall').toFixed(0)} → ${m('with', 'wall').toFixed(0)} ms (${(m('with', 'wall') / m('without', 'wall')).toFixed(2)}×) · CPU ${m('without', 'cpu').toFixed(0)} → ${m('with', 'cpu').toFixed(0)} ms (${(m('with', 'cpu') / m('without', 'cpu')).toFixed(2)}×)   (${load()})`);
}
