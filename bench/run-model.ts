/**
 * Runner of the model benchmark page (bench/model.ts): builds the SmolLM-135M-shaped random Llama
 * and its ONNX twin once (.artifacts/bench/, never committed), starts its own Vite dev server, opens
 * the page in Chromium and prints one table from one run — prefill and decode ms, GFLOP/s, decode
 * GB/s against the adapter's measured peaks, our engine against transformers.js on the same model
 * and adapter, our kernels against the previous ones (webgpu-prev: before the fused QKV kernel,
 * cached bind groups and the vec4 matmul) and against no fusion, lens/forward, WebGPU dispatches per
 * decode step and per layer, bind groups made per step — with the load average beside each ratio.
 *
 *   npx tsx bench/run-model.ts [--t 16,64] [--decode 8] [--reps 1] [--warmup 0]
 *        [--impls webgpu,webgpu-prev,webgpu-unfused,cpu,tjs-wasm,tjs-webgpu] [--no-lens] [--gpu] [--peak-scale 0.05]
 *        [--layers 30] [--tuning gpu|cpu] [--cpu-threads 1] [--interleave] [--json out.json]
 *
 * --gpu: a real GPU (Chromium on Vulkan, GPU blocklist off) instead of SwiftShader; the peaks are then
 * measured at full size. --layers N: a shallower model of the same widths (quick checks on SwiftShader).
 * --cpu-threads N: our CPU backend's WASM matmul on N threads (N > 1 in a dedicated worker, as the
 * product runs it) and onnxruntime-web's numThreads = N for tjs-wasm, so cpu vs tjs-wasm compares
 * equal thread counts (default 1; the column thr shows the threads each ran on). --interleave: cpu
 * and tjs-wasm loaded together, their repetitions alternating, so both see the same load (use it on
 * a busy machine; no lens grid for them).
 * Chromium is /usr/bin/chromium or $CHROMIUM_PATH.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { llamaOnnx } from '../tools/onnx_llama';
import { fromF16Bits, toF16Bits } from '../workers/engine/backend/f16';
import { llamaTensors, smolLM135MRandom, SMOLLM_135M } from './smollm_random';
import { withBenchPage } from './bench_page';
import type { Impl, ModelBenchOptions, ModelBenchResult, Row } from './model';
import type { KernelTuning } from '../workers/engine/backend/webgpu_host';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const GPU = args.includes('--gpu');
const LAYERS = Number(flag('layers', String(SMOLLM_135M.num_hidden_layers)));
const opts = {
  ts: flag('t', GPU ? '64,512' : '16').split(',').map(Number),
  nDecode: Number(flag('decode', GPU ? '64' : '8')),
  reps: Number(flag('reps', GPU ? '3' : '1')),
  warmup: Number(flag('warmup', GPU ? '1' : '0')),
  impls: flag('impls', 'webgpu,webgpu-prev,webgpu-unfused,cpu,tjs-wasm,tjs-webgpu').split(',') as Impl[],
  lens: !args.includes('--no-lens'),
  peakScale: Number(flag('peak-scale', GPU ? '1' : '0.02')),
  tuning: (flag('tuning', '') || undefined) as KernelTuning | undefined,
  cpuThreads: Number(flag('cpu-threads', '1')),
  interleave: args.includes('--interleave'),
};
if (!(Number.isInteger(opts.cpuThreads) && opts.cpuThreads >= 1)) throw new Error(`--cpu-threads ${flag('cpu-threads', '')}: expected a whole number ≥ 1`);
const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;

/** The model folder with onnx/model.onnx beside model.safetensors (same weights, rounded to f16 as the safetensors store them). */
function modelDir(): string {
  const config = { ...SMOLLM_135M, num_hidden_layers: LAYERS };
  const dir = smolLM135MRandom(path.join(ROOT, '.artifacts', 'bench', LAYERS === SMOLLM_135M.num_hidden_layers ? 'smollm-135m-random' : `smollm-135m-random-${LAYERS}l`), config);
  const onnx = path.join(dir, 'onnx', 'model.onnx');
  if (!fs.existsSync(onnx)) {
    console.log(`writing ${path.relative(ROOT, onnx)} …`);
    const weights = new Map(llamaTensors(config).map((t) => [t.name, t.data.map((x) => fromF16Bits(toF16Bits(x)))]));
    fs.mkdirSync(path.dirname(onnx), { recursive: true });
    fs.writeFileSync(onnx, llamaOnnx({ ...config, weights }));
  }
  return dir;
}

const dir = modelDir();
const loadBefore = load();
const result: ModelBenchResult = await withBenchPage({ html: 'model.html', fn: 'runModelBench', port: 5190, gpu: GPU }, (page, base) => {
  const o: ModelBenchOptions = { ...opts, modelUrl: `${base}bench-models/${path.basename(dir)}/`, tjsRoot: `${base}bench-models/`, tjsModel: path.basename(dir) };
  return page.evaluate((x) => window.runModelBench(x), o);
});
const loadAfter = load();

const f = (x: number | undefined, d = 1) => (x === undefined || !Number.isFinite(x) ? '—' : x >= 100 ? x.toFixed(0) : x.toFixed(d));
console.log(`\nmodel: ${LAYERS} layers of SmolLM-135M's widths, random weights · adapter: ${result.adapter}${opts.tuning ? ` ('${opts.tuning}' kernels)` : ''} · crossOriginIsolated ${result.crossOriginIsolated}`);
if (result.peak) console.log(`adapter peaks (measured): copy ${f(result.peak.copyGBs)} GB/s, f32 FMA ${f(result.peak.fmaGflops)} GFLOP/s`);
console.log('impl           thr    T   prefill ms  GFLOP/s  %peak   decode ms/tok  GFLOP/s   GB/s  %peak   lens/fwd  disp/step  disp/layer  bindgroups/step');
const gpuImpl = (i: Impl) => i.startsWith('webgpu') || i === 'tjs-webgpu';
for (const r of result.rows) {
  const pk = result.peak && gpuImpl(r.impl);
  console.log([
    r.impl.padEnd(14), String(r.threads ?? '—').padStart(3), String(r.T).padStart(4), f(r.prefillMs).padStart(12), f(r.prefillGflops, 2).padStart(8),
    (pk ? f(100 * r.prefillGflops / result.peak!.fmaGflops) : '—').padStart(6), f(r.decodeMs).padStart(15), f(r.decodeGflops, 2).padStart(8),
    f(r.decodeGBs, 2).padStart(6), (pk ? f(100 * r.decodeGBs / result.peak!.copyGBs) : '—').padStart(6),
    (r.lensMs !== undefined ? `${(r.lensMs / r.forwardMs!).toFixed(2)}×` : '—').padStart(10), String(r.dispatchesPerDecodeStep ?? '—').padStart(10),
    String(r.dispatchesPerLayer ?? '—').padStart(11), String(r.bindGroupsPerDecodeStep ?? '—').padStart(16),
  ].join(' '));
}
const find = (impl: Impl, T: number): Row | undefined => result.rows.find((r) => r.impl === impl && r.T === T);
console.log('\nratios (same model, prompt and adapter; > 1 = ours faster):');
for (const T of opts.ts) {
  for (const [ours, theirs] of [['webgpu', 'tjs-webgpu'], ['webgpu', 'webgpu-prev'], ['webgpu', 'webgpu-unfused'], ['cpu', 'tjs-wasm']] as [Impl, Impl][]) {
    const a = find(ours, T), b = find(theirs, T);
    const thr = a?.threads !== undefined && b?.threads !== undefined ? ` at ${a.threads} vs ${b.threads} threads` : '';
    if (a && b) console.log(`  T=${T}: ${ours} vs ${theirs}${thr}: prefill ${(b.prefillMs / a.prefillMs).toFixed(2)}×, decode ${(b.decodeMs / a.decodeMs).toFixed(2)}× (${load()})`);
  }
  const ids = opts.impls.map((i) => find(i, T)?.greedy.join(',')).filter(Boolean);
  if (ids.length > 1) console.log(`  T=${T}: greedy ids ${new Set(ids).size === 1 ? 'agree' : 'DIFFER'} across ${ids.length} implementations`);
}
for (const e of result.errors) console.log(`error: ${e}`);
console.log(`load before: ${loadBefore}; after: ${loadAfter}`);
const json = flag('json', path.join(ROOT, '.artifacts', 'bench', 'model.json'));
fs.mkdirSync(path.dirname(json), { recursive: true });
fs.writeFileSync(json, JSON.stringify({ options: opts, layers: LAYERS, loadBefore, loadAfter, ...result }, null, 2));
