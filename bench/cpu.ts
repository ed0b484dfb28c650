/**
 * CPU backend benchmark (Node), all figures from one run with the load average beside each:
 * 1. GEMM/GEMV GFLOP/s of the WASM SIMD matmul on 1 and --threads threads (worker_threads sharing
 *    the wasm memory), of the fused Q8_0 / Q4_0 GEMV (1 thread) and of the scalar TypeScript loop
 *    against numpy (OpenBLAS, OPENBLAS_NUM_THREADS=1) on the projection shapes of SmolLM-135M at
 *    T = 1, 16, 64, 512. numpy comes from Debian's python3-numpy (benchmark only; skipped with a note
 *    when absent).
 * 2. On a SmolLM-135M-shaped random Llama (bench/smollm_random.ts): prefill and decode ms with WASM
 *    SIMD on 1 and --threads threads and with the scalar matmul, and the logit-lens margin grid
 *    against a plain forward at T = 64 and 512 (lens = forward capturing the L+1 residual streams +
 *    LN_f and the futures' rows of W_U, read back; forward = Engine.run with last-position logits).
 * On a machine shared with other jobs the thread speed-up is bounded by the idle cores: read the
 * load average beside each figure.
 *
 *   npx tsx bench/cpu.ts [--reps 3] [--t 64,512] [--decode 16] [--threads 2] [--no-scalar-model] [--no-scalar] [--no-lens] [--lens-only]
 *
 * --lens-only: only part 3 (the lens grid against a forward, on --threads threads, runs interleaved).
 */
import { spawnSync } from 'node:child_process';
import * as os from 'node:os';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { quantise } from '../workers/engine/backend/quant';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { RunContext } from '../workers/engine/model/run_context';
import { interleaved, lensGrid } from './page_tools';
import { lensColumnLogits } from '../workers/engine/model/lens';
import { seededRandom } from '../workers/engine/analysis/sampling';
import { smolLM135MRandom, SMOLLM_135M } from './smollm_random';

const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const REPS = Number(flag('reps', '3'));
const TS = flag('t', '64,512').split(',').map(Number);
const N_DECODE = Number(flag('decode', '16'));
const SCALAR_MODEL = !args.includes('--no-scalar-model') && !args.includes('--no-scalar');
const SCALAR = !args.includes('--no-scalar');
const LENS = !args.includes('--no-lens');
const LENS_ONLY = args.includes('--lens-only');
const THREADS = Number(flag('threads', '2'));

const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const now = () => performance.now();

async function time(reps: number, fn: () => unknown | Promise<unknown>, warmup = 1): Promise<number> {
  for (let i = 0; i < warmup; i++) await fn();
  const t: number[] = [];
  for (let i = 0; i < reps; i++) { const t0 = now(); await fn(); t.push(now() - t0); }
  return median(t);
}

/** numpy's single-thread ms per x·wᵀ for each shape, or null when numpy is missing. */
function numpyTimes(shapes: [number, number, number][]): number[] | null {
  const py = `
import sys, time, numpy as np
out = []
for n, k, m in ${JSON.stringify(shapes)}:
    x = np.random.rand(n, k).astype(np.float32); w = np.random.rand(m, k).astype(np.float32)
    reps = max(3, int(2e8 // (2 * n * k * m)))
    x @ w.T
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps): x @ w.T
        ts.append((time.perf_counter() - t0) / reps * 1e3)
    out.append(sorted(ts)[2])
print(out)
`;
  const r = spawnSync('python3', ['-c', py], { env: { ...process.env, OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' }, encoding: 'utf8' });
  if (r.status !== 0) { console.log(`numpy unavailable (${(r.stderr || r.error?.message || '').trim().split('\n').pop()}): apt-get install -y python3-numpy`); return null; }
  return JSON.parse(r.stdout.trim());
}

async function gemmTable(): Promise<void> {
  const D = SMOLLM_135M.hidden_size, F = SMOLLM_135M.intermediate_size, V = SMOLLM_135M.vocab_size;
  const shapes: [number, number, number][] = [[1, D, F], [1, F, D], [1, D, V], [16, D, F], [16, F, D], [16, D, D], [64, D, F], [64, F, D], [64, D, D], [512, D, F]];
  const simd = new CpuBackend(), threaded = new CpuBackend(undefined, { threads: THREADS }), scalar = new CpuBackend(undefined, { simd: false });
  await threaded.whenStarted();
  const rand = seededRandom(3);
  console.log(`\n1. matmul x [n, k] · wᵀ [m, k] (GFLOP/s; simd/numpy = WASM SIMD 1 thread / numpy 1 thread; ${threaded.threads} threads = worker_threads)`);
  console.log(`   n     k      m  simd-1t  simd-${threaded.threads}t  q8_0-1t  q4_0-1t  scalar-ts  numpy-1t  simd/numpy  ${threaded.threads}t/1t  q8/f32  q4/f32`);
  const np = numpyTimes(shapes);
  for (const [i, [n, k, m]] of shapes.entries()) {
    const x = Float32Array.from({ length: n * k }, () => rand() - 0.5), w = Float32Array.from({ length: m * k }, () => rand() - 0.5);
    const flop = 2 * n * k * m;
    const reps = Math.max(3, Math.min(50, Math.round(2e8 / flop)));
    const run = async (b: CpuBackend, r: number, weight: 'f32' | 'q8_0' | 'q4_0' = 'f32') => {
      const tx = b.upload(x, [n, k]), tw = weight === 'f32' ? b.upload(w, [m, k]) : b.uploadQuant(quantise(weight, w, m, k));
      const ms = await time(r, () => b.release(b.linear(tx, tw)));
      b.release(tx); b.release(tw);
      return ms;
    };
    const tSimd = await run(simd, reps), tThreads = await run(threaded, reps);
    const tQ8 = n === 1 ? await run(simd, reps, 'q8_0') : NaN, tQ4 = n === 1 ? await run(simd, reps, 'q4_0') : NaN;
    const tScalar = n >= 512 || !SCALAR ? NaN : await run(scalar, Math.max(1, Math.round(reps / 20)));
    const g = (ms: number) => (flop / ms / 1e6).toFixed(2);
    const tNp = np ? np[i] : NaN;
    console.log(`${String(n).padStart(4)} ${String(k).padStart(5)} ${String(m).padStart(6)} ${g(tSimd).padStart(8)} ${g(tThreads).padStart(8)} ${g(tQ8).padStart(8)} ${g(tQ4).padStart(8)} ${g(tScalar).padStart(10)} ${g(tNp).padStart(9)} ${(tNp / tSimd).toFixed(2).padStart(10)}× ${(tSimd / tThreads).toFixed(2).padStart(6)}× ${(tSimd / tQ8).toFixed(2).padStart(6)}× ${(tSimd / tQ4).toFixed(2).padStart(6)}×   (${load()})`);
  }
  threaded.dispose();
}

const PROMPT_IDS = (T: number) => { const r = seededRandom(T); return [1, ...Array.from({ length: T - 1 }, () => 3 + Math.floor(r() * 500))]; };

/** Prefill of T tokens (last-position logits) and mean greedy decode step after it. */
async function prefillDecode(e: Engine, T: number, reps = REPS, warmup = 1, nDecode = N_DECODE): Promise<{ prefillMs: number; decodeMs: number }> {
  const ids = PROMPT_IDS(T);
  const prefillMs = await time(reps, () => e.run(ids, { logits: 'last' }), warmup);
  const b = e.backend;
  const decodeMs = await time(1, async () => {
    for (let k = 0; k < nDecode; k++) {
      const ctx = new RunContext(b, { pos0: T + k, n: 1, nPrompt: T, step: k + 1 });
      const out = e.model.forward(Int32Array.of(5 + k), ctx, 'last')!;
      await b.read(out);
      b.release(out);
      ctx.release();
    }
  }, 0) / nDecode;
  return { prefillMs, decodeMs };
}

async function modelTable(): Promise<void> {
  const dir = smolLM135MRandom();
  console.log(`\n2. SmolLM-135M-shaped random Llama (${dir}), CPU backend`);
  const engines: [string, Engine][] = LENS_ONLY ? [] : [['wasm-simd', await Engine.load(new NodeFiles(dir), new CpuBackend(), undefined, { contextLength: 1024 })]];
  const threaded = new CpuBackend(undefined, { threads: THREADS });
  await threaded.whenStarted();
  const tName = `simd-${threaded.threads}t`;
  const te = await Engine.load(new NodeFiles(dir), threaded, undefined, { contextLength: 1024 });
  if (SCALAR_MODEL && !LENS_ONLY) engines.push(['scalar-ts', await Engine.load(new NodeFiles(dir), new CpuBackend(undefined, { simd: false }), undefined, { contextLength: 1024 })]);
  // The scalar loop is ~0.1 GFLOP/s: it gets one short prompt, one repetition and 4 decode steps.
  if (!LENS_ONLY) {
    const runs: [string, Engine, number][] = [...TS.flatMap((T): [string, Engine, number][] => [['wasm-simd', engines[0][1], T], [tName, te, T]]), ...engines.slice(1).flatMap(([name, e]): [string, Engine, number][] => [['wasm-simd', engines[0][1], 16], [name, e, 16]])];
    const pd = new Map<string, { prefillMs: number; decodeMs: number }>();
    for (const [name, e, T] of runs) {
      const r = name === 'scalar-ts' ? await prefillDecode(e, T, 1, 0, 4) : await prefillDecode(e, T);
      pd.set(`${name}:${T}`, r);
      console.log(`   ${name.padEnd(10)} T=${String(T).padStart(3)}: prefill ${r.prefillMs.toFixed(0)} ms (${(T / r.prefillMs * 1e3).toFixed(1)} tok/s), decode ${r.decodeMs.toFixed(1)} ms/token   (${load()})`);
    }
    for (const T of TS) {
      const one = pd.get(`wasm-simd:${T}`)!, many = pd.get(`${tName}:${T}`)!;
      console.log(`   ${threaded.threads} threads vs 1 at T=${T}: prefill ${(one.prefillMs / many.prefillMs).toFixed(2)}× faster, decode ${(one.decodeMs / many.decodeMs).toFixed(2)}× faster   (${load()})`);
    }
    const sc = pd.get('scalar-ts:16'), w = pd.get('wasm-simd:16');
    if (sc && w) console.log(`   WASM SIMD vs scalar at T=16: prefill ${(sc.prefillMs / w.prefillMs).toFixed(1)}× faster, decode ${(sc.decodeMs / w.decodeMs).toFixed(1)}× faster   (${load()})`);
  }
  if (LENS) {
    console.log(`\n3. logit-lens margin grid vs a plain forward (CPU backend, WASM SIMD, ${threaded.threads} threads; forward and lens alternate, median of ${REPS} each)`);
    for (const T of TS) {
      const ids = PROMPT_IDS(T);
      const [forwardMs, lensMs] = await interleaved({ reps: REPS, warmup: 1 }, () => te.run(ids, { logits: 'last' }), () => lensGrid(te, ids, Int32Array.of(17, 42)));
      console.log(`   T=${String(T).padStart(3)}: forward ${forwardMs.toFixed(0)} ms, lens grid ${lensMs.toFixed(0)} ms, lens/forward ${(lensMs / forwardMs).toFixed(2)}×   (${load()})`);
      // What the lens adds to its forward, alone (less exposed to load swings than the difference of two forwards):
      // the concat of the L+1 captured residuals, LN_f on every row, W_U[cols] and the read-back.
      const b = te.backend, L1 = te.spec.nLayers + 1, D = te.spec.dModel, r = seededRandom(T);
      const parts = Array.from({ length: L1 }, () => b.upload(Float32Array.from({ length: T * D }, () => r() - 0.5), [T, D]));
      const tailMs = await time(REPS, async () => {
        const stack = b.concatRows(parts), logits = lensColumnLogits(te.model, stack, [17, 42]);
        await b.read(logits);
        b.release(stack); b.release(logits);
      });
      for (const t of parts) b.release(t);
      console.log(`          lens tail alone (concat ${L1}·T rows, LN_f, W_U[cols], read) ${tailMs.toFixed(1)} ms = ${(100 * tailMs / forwardMs).toFixed(1)} % of the forward   (${load()})`);
    }
  }
  te.dispose();
  for (const [, en] of engines) en.dispose();
}

console.log(`CPU benchmark · node ${process.version} · ${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length} · ${load()}`);
if (!LENS_ONLY) await gemmTable();
await modelTable();
