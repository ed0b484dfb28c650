/**
 * f16 arithmetic and subgroup reductions on WebGPU in Node (npm `webgpu` = Dawn, on whatever Vulkan
 * driver the machine has: Mesa 25 lavapipe here, a real GPU elsewhere), on the first --layers
 * layers of the SmolLM-135M-shaped random Llama (bench/smollm_random.ts: d_model 576, 9/3 heads,
 * d_mlp 1536, vocab 49152). For each kernel tuning, all in one run with the load average beside
 * each figure: prefill ms (T = --t) and decode ms per token for
 *   f32 weights · f32 arithmetic (the baseline), f16 weights · f32 arithmetic (storage only),
 *   f16 weights · f16 arithmetic (WebGpuOptions.computeDtype 'f16'),
 * each with the workgroup-memory tree and with subgroup reductions (WebGpuOptions.subgroups), and
 * the ratios to the baseline. A configuration the adapter cannot run (no shader-f16 / subgroups) is
 * printed as such.
 *
 *   npx tsx bench/node_gpu.ts [--layers 4] [--t 16] [--decode 8] [--reps 3] [--tunings cpu,gpu]
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KernelTuning } from '../workers/engine/backend/webgpu_host';
import { NodeFiles } from '../workers/engine/io/node_files';
import { loadTransformer, type WeightDtype } from '../workers/engine/model/load';
import { RunContext } from '../workers/engine/model/run_context';
import { nodeBackend, nodeAdapter } from '../tests/gpu/node_webgpu';
import { smolLM135MRandom, SMOLLM_135M } from './smollm_random';

const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const LAYERS = Number(flag('layers', '4'));
const T = Number(flag('t', '16'));
const N_DECODE = Number(flag('decode', '8'));
const REPS = Number(flag('reps', '3'));
const TUNINGS = flag('tunings', 'cpu,gpu').split(',') as KernelTuning[];

const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const now = () => performance.now();

interface Config { label: string; weights: WeightDtype; compute: 'f32' | 'f16'; subgroups: boolean }
const CONFIGS: Config[] = [];
for (const subgroups of [false, true]) {
  CONFIGS.push(
    { label: `f32 w, f32 math, ${subgroups ? 'subgroups' : 'tree'}`, weights: 'f32', compute: 'f32', subgroups },
    { label: `f16 w, f32 math, ${subgroups ? 'subgroups' : 'tree'}`, weights: 'f16', compute: 'f32', subgroups },
    { label: `f16 w, f16 math, ${subgroups ? 'subgroups' : 'tree'}`, weights: 'f16', compute: 'f16', subgroups },
  );
}

/** Prefill of T tokens (median of REPS, after one warm-up) and median decode ms per token over N_DECODE steps. */
async function measure(c: Config, tuning: KernelTuning, dir: string): Promise<{ prefill: number; decode: number } | string> {
  const b = await nodeBackend({ tuning, computeDtype: c.compute, subgroups: c.subgroups });
  try {
    if (c.compute === 'f16' && b.compute !== 'f16') return 'no shader-f16 on this adapter';
    if (c.subgroups && !b.subgroups) return 'no subgroups on this adapter';
    const { model } = await loadTransformer(new NodeFiles(dir), b, undefined, { weightDtype: c.weights, contextLength: T + N_DECODE + 1 });
    const ids = Int32Array.from({ length: T }, (_, i) => 3 + ((i * 37) % 500));
    const step = async (input: Int32Array, pos0: number): Promise<number> => {
      const ctx = new RunContext(b, { pos0, n: input.length, nPrompt: T, step: pos0 === 0 ? 0 : pos0 - T + 1 });
      const out = model.forward(input, ctx, 'last')!;
      const top = await b.topk(out, 1);
      b.release(out);
      ctx.release();
      return top.indices[0];
    };
    const prefills: number[] = [];
    for (let r = 0; r <= REPS; r++) {
      const t0 = now();
      await step(ids, 0);
      if (r > 0) prefills.push(now() - t0);
    }
    let next = await step(ids, 0);
    const decodes: number[] = [];
    for (let k = 0; k < N_DECODE; k++) {
      const t0 = now();
      next = await step(Int32Array.of(next), T + k);
      decodes.push(now() - t0);
    }
    model.dispose();
    return { prefill: median(prefills), decode: median(decodes.slice(1)) };
  } finally {
    b.dispose();
  }
}

const adapter = await nodeAdapter();
if (typeof adapter === 'string') throw new Error(adapter);
console.log(`adapter: ${adapter.description}; features: ${['shader-f16', 'subgroups'].filter((f) => adapter.features.has(f)).join(', ') || 'neither shader-f16 nor subgroups'}`);
const dir = smolLM135MRandom(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '.artifacts', 'bench', `smollm-135m-random-${LAYERS}l`), { ...SMOLLM_135M, num_hidden_layers: LAYERS });
console.log(`model: SmolLM-135M shape, ${LAYERS} of 30 layers; prefill T = ${T}, decode ${N_DECODE} tokens; medians of ${REPS} (prefill) and ${N_DECODE - 1} (decode)`);
for (const tuning of TUNINGS) {
  let base: { prefill: number; decode: number } | null = null;
  for (const c of CONFIGS) {
    const r = await measure(c, tuning, dir);
    if (typeof r === 'string') { console.log(`${tuning.padEnd(4)} ${c.label.padEnd(30)} skipped: ${r}`); continue; }
    base ??= r;
    console.log(`${tuning.padEnd(4)} ${c.label.padEnd(30)} prefill ${r.prefill.toFixed(1).padStart(8)} ms (×${(base.prefill / r.prefill).toFixed(2)} vs f32/tree)  decode ${r.decode.toFixed(1).padStart(7)} ms/token (×${(base.decode / r.decode).toFixed(2)})  ${load()}`);
  }
}
process.exit(0);
