/**
 * Quantised weights benchmark: memory and decode speed of the SmolLM-135M-shaped random Llama
 * (bench/smollm_random.ts) with float32, Q8_0 and Q4_0 linear weights, on the CPU backend in Node,
 * measured in one run, and the logit error of each against float32 on the same tokens.
 *
 *
 * Memory: the bytes of every weight tensor the load created (packed blocks for quantised ones, 4 per
 * value otherwise; the tied embedding counted once), checked against the estimate (model/estimate.ts,
 * what the load control's size check uses). Decode: ms per token over --steps greedy steps after a
 * --prompt-token prefill (KV cache; after one untimed forward), token ids < 512, every run fed the
 * float32 run's greedy tokens.
 * Each dtype on 1 and --threads threads (CPU backend worker_threads; the logits are bit-identical).
 * Load average printed beside each figure (on a machine shared with other jobs, threads help only
 * as far as cores are idle).
 *
 *   npx tsx bench/quant.ts [--steps 16] [--prompt 16] [--threads 2]
 */
import * as os from 'node:os';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { estimateModel } from '../workers/engine/model/estimate';
import { formatBytes } from '../workers/engine/io/bytes';
import { NodeFiles } from '../workers/engine/io/node_files';
import { loadTransformer, type WeightDtype } from '../workers/engine/model/load';
import { RunContext } from '../workers/engine/model/run_context';
import { smolLM135MRandom } from './smollm_random';

const arg = (k: string, d: number) => { const i = process.argv.indexOf(`--${k}`); return i > 0 ? Number(process.argv[i + 1]) : d; };
const STEPS = arg('steps', 16), PROMPT = arg('prompt', 16), THREADS = arg('threads', 2);
const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;

/** Bytes of the weight tensors under `w` (ModelWeights), each tensor once. */
function weightBytes(w: unknown, seen = new Set<unknown>()): number {
  if (typeof w !== 'object' || w === null || seen.has(w)) return 0;
  seen.add(w);
  const t = w as { shape?: unknown; size?: number; bytes?: number };
  if (Array.isArray(t.shape) && typeof t.size === 'number') return t.bytes ?? 4 * t.size;
  return Object.values(w).reduce((s: number, v) => s + weightBytes(v, seen), 0);
}

interface Row { dtype: WeightDtype; threads: number; stored: number; estimate: number; loadMs: number; prefillMs: number; decodeMs: number; maxDiff: number; load: string }

async function run(dir: string, dtype: WeightDtype, ref: Float32Array[] | null, threads: number): Promise<{ row: Row; logits: Float32Array[] }> {
  const b = new CpuBackend(undefined, { threads });
  await b.whenStarted();
  const t0 = performance.now();
  const { model } = await loadTransformer(new NodeFiles(dir), b, undefined, { weightDtype: dtype, contextLength: PROMPT + STEPS + 1 });
  const loadMs = performance.now() - t0;
  const ids = Int32Array.from({ length: PROMPT }, (_, i) => (i * 37 + 11) % 512);
  const logits: Float32Array[] = [];
  const step = async (input: Int32Array, pos0: number): Promise<number> => {
    const ctx = new RunContext(b, { pos0, n: input.length, nPrompt: PROMPT, step: pos0 === 0 ? 0 : pos0 - PROMPT + 1 });
    const t = model.forward(input, ctx, 'last')!;
    const row = await b.read(t);
    b.release(t);
    ctx.release();
    logits.push(row);
    // the float32 run's greedy token drives every run, so all see the same inputs
    const z = ref ? ref[logits.length - 1] : row;
    let best = 0;
    for (let i = 1; i < 512; i++) if (z[i] > z[best]) best = i;
    return best;
  };
  // one untimed forward first: the float32 weights move into the wasm arena on first use
  const warm = new RunContext(b, { pos0: 0, n: PROMPT, nPrompt: PROMPT, step: 0 });
  b.release(model.forward(ids, warm, 'last')!);
  warm.release();
  await b.sync();
  const t1 = performance.now();
  let next = await step(ids, 0);
  const prefillMs = performance.now() - t1;
  const t2 = performance.now();
  for (let s = 0; s < STEPS; s++) next = await step(Int32Array.of(next), PROMPT + s);
  const decodeMs = (performance.now() - t2) / STEPS;
  const stored = weightBytes(model.weights);
  let maxDiff = 0;
  if (ref) logits.forEach((z, i) => { for (let j = 0; j < z.length; j++) maxDiff = Math.max(maxDiff, Math.abs(z[j] - ref[i][j])); });
  const estimate = (await estimateModel(new NodeFiles(dir), { weightDtype: dtype })).weightBytes;
  model.dispose();
  b.dispose();
  return { row: { dtype, threads: b.threads, stored, estimate, loadMs, prefillMs, decodeMs, maxDiff, load: load() }, logits };
}

const dir = smolLM135MRandom();
console.log(`SmolLM-135M-shaped random Llama, CPU backend (Node ${process.version}, ${os.cpus().length} cores), prefill ${PROMPT} tokens, ${STEPS} decode steps`);
const f32 = await run(dir, 'f32', null, 1);
const rows = [f32.row];
for (const dtype of ['q8_0', 'q4_0'] as WeightDtype[]) rows.push((await run(dir, dtype, f32.logits, 1)).row);
if (THREADS > 1) for (const dtype of ['f32', 'q8_0', 'q4_0'] as WeightDtype[]) rows.push((await run(dir, dtype, f32.logits, THREADS)).row);
for (const r of rows) {
  const base = rows.find((x) => x.dtype === 'f32' && x.threads === r.threads)!;
  const one = rows.find((x) => x.dtype === r.dtype && x.threads === 1)!;
  console.log(`${r.dtype.padEnd(5)} ${r.threads}t weights ${formatBytes(r.stored).padStart(10)} (${(r.stored / f32.row.stored).toFixed(3)}× f32; estimate ${r.estimate === r.stored ? 'equal' : formatBytes(r.estimate)}); load ${(r.loadMs / 1000).toFixed(1)} s; prefill ${r.prefillMs.toFixed(0)} ms; decode ${r.decodeMs.toFixed(1)} ms/token (${(r.decodeMs / base.decodeMs).toFixed(2)}× f32 at ${r.threads}t${r.threads > 1 ? `; ${(one.decodeMs / r.decodeMs).toFixed(2)}× faster than 1t` : ''}); max |Δlogit| vs f32 ${r.maxDiff.toExponential(2)}  [${r.load}]`);
}
