/**
 * CPU backend attention at long context: one decode query (n = 1) against T cached keys with
 * SmolLM-135M's head shape (9 query heads, 3 KV heads, d_head 64), i.e. one layer's attention in a
 * decode step; ms, GFLOP/s (2 FLOPs per multiply-add, q·k and p·v) and its share of a decode step
 * of that layer next to the layer's projections (CpuBackend.linear on q/k/v/o, gate/up/down),
 * measured in one run with the load average beside each row.
 *
 *   npx tsx bench/cpu_attention.ts [--t 512,1024,2048] [--reps 30]
 */
import * as os from 'node:os';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { attentionCpu } from '../workers/engine/ops/attention.cpu';

const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const ts = flag('t', '512,1024,2048').split(',').map(Number);
const reps = Number(flag('reps', '30'));
const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;
const H = 9, KV = 3, d = 64, D = 576, MLP = 1536, kvW = KV * d;
const rand = (n: number) => Float32Array.from({ length: n }, () => Math.random() - 0.5);

function time(f: () => void): number {
  for (let i = 0; i < reps; i++) f(); // as many unmeasured runs first (JIT tier-up)
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) f();
  return (performance.now() - t0) / reps;
}

// the layer's projections for one token: q, k, v, o, gate, up, down
const b = new CpuBackend();
const x = b.upload(rand(D), [1, D]);
const mats = [[H * d, D], [kvW, D], [kvW, D], [D, H * d], [MLP, D], [MLP, D], [D, MLP]].map(([o, i]) => ({ w: b.upload(rand(o * i), [o, i]), i }));
const xs = new Map([[D, x], [MLP, b.upload(rand(MLP), [1, MLP])]]);
const linMs = time(() => { for (const m of mats) b.release(b.linear(xs.get(m.i)!, m.w)); });
console.log(`CPU backend (${b.constructor.name}), one layer of SmolLM-135M's shape, decode (n = 1): projections ${linMs.toFixed(2)} ms (${load()})`);
console.log('     T   attention ms   GFLOP/s   attention / projections');
for (const T of ts) {
  const q = rand(H * d), k = rand((T + 1) * kvW), v = rand((T + 1) * kvW);
  const p = { n: 1, past: T, nHeads: H, nKvHeads: KV, headDim: d, scale: d ** -0.5, softcap: 0, window: 0, wantPattern: false, wantScores: false };
  const ms = time(() => attentionCpu(q, k, v, p));
  console.log(`${String(T).padStart(6)} ${ms.toFixed(2).padStart(14)} ${((4 * H * (T + 1) * d) / ms / 1e6).toFixed(2).padStart(9)} ${`${(ms / linMs).toFixed(2)}×`.padStart(25)}  (${load()})`);
}
