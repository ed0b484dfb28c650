/**
 * Runner of the flash-decoding benchmark (bench/flash.ts): builds a SmolLM-135M-shaped random Llama
 * of a few layers (.artifacts/bench/, never committed; max_position_embeddings 4096 so T = 2048
 * fits), starts its own Vite dev server, opens the page in Chromium and prints, per context length T,
 * attention-alone and decode-step ms with flash-decoding ('auto') and without ('off'), their
 * ratio, the split chosen, and the load average beside each row — all from one run.
 *
 *   npx tsx bench/run-flash.ts [--t 512,1024,2048] [--layers 4] [--reps 5] [--tuning gpu|cpu] [--gpu] [--json out.json]
 *
 * On SwiftShader (the default here) the "GPU" is this machine's CPU cores: the ratio says how much the
 * split spreads work across CPU threads, not what it does on a GPU, where one workgroup per head
 * leaves most compute units idle. --gpu: Chromium on Vulkan with the GPU blocklist off (bench/gpu.sh).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { smolLM135MRandom, SMOLLM_135M } from './smollm_random';
import { withBenchPage } from './bench_page';
import type { FlashBenchOptions, FlashBenchResult } from './flash';
import type { KernelTuning } from '../workers/engine/backend/webgpu_host';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const GPU = args.includes('--gpu');
const LAYERS = Number(flag('layers', '4'));
const CTX = 4096;
const ts = flag('t', '512,1024,2048').split(',').map(Number);
if (ts.some((t) => !Number.isInteger(t) || t < 1 || t >= CTX)) throw new Error(`--t needs context lengths in 1..${CTX - 1}`);
const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;

const config = { ...SMOLLM_135M, num_hidden_layers: LAYERS, max_position_embeddings: CTX };
const dir = smolLM135MRandom(path.join(ROOT, '.artifacts', 'bench', `smollm-135m-random-${LAYERS}l-ctx${CTX}`), config);
const loadBefore = load();
// 404s are expected: the loader probes for model.safetensors.index.json
const r: FlashBenchResult = await withBenchPage({ html: 'flash.html', fn: 'runFlashBench', port: 5191, gpu: GPU, ignore: /status of 404/ }, (page, base) => {
  const o: FlashBenchOptions = { modelUrl: `${base}bench-models/${path.basename(dir)}/`, ts, reps: Number(flag('reps', '5')), tuning: (flag('tuning', '') || undefined) as KernelTuning | undefined };
  return page.evaluate((x) => window.runFlashBench(x), o);
});
const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
console.log(`\nflash-decoding: ${r.layers} layers of SmolLM-135M's widths (9 heads, 3 KV heads, d_head 64), random weights and KV cache · adapter: ${r.adapter} ('${r.tuning}' kernels, ${r.threads} threads)`);
if (/swiftshader|fallback/i.test(r.adapter)) console.log('(SwiftShader runs WebGPU on the CPU cores: the ratio shows the split spreading work over threads, not a GPU\'s speed-up)');
console.log('    T  split (chunks × keys)  attention off ms  split ms  ratio   decode step off ms  split ms  ratio   max|Δz|');
for (const x of r.rows) {
  console.log([
    String(x.T).padStart(5), x.plan.padStart(22), f(x.attnOffMs).padStart(17), f(x.attnSplitMs).padStart(9), `${(x.attnOffMs / x.attnSplitMs).toFixed(2)}×`.padStart(6),
    f(x.stepOffMs).padStart(20), f(x.stepSplitMs).padStart(9), `${(x.stepOffMs / x.stepSplitMs).toFixed(2)}×`.padStart(6), x.maxAbsDiff.toExponential(1).padStart(9), ` (${load()})`,
  ].join(' '));
}
console.log(`load before: ${loadBefore}; after: ${load()}`);
const json = flag('json', path.join(ROOT, '.artifacts', 'bench', 'flash.json'));
fs.mkdirSync(path.dirname(json), { recursive: true });
fs.writeFileSync(json, JSON.stringify({ loadBefore, loadAfter: load(), ...r }, null, 2));
