import { describe, expect, it } from 'vitest';
import { CONTROL_BYTES, GemmThreads, joins, threadsAvailable } from '../../workers/engine/backend/gemm_threads';
import { GEMM_SHARED_WASM_BASE64 } from '../../workers/engine/ops/gemm.wasm';
import { quantise, scaleOffset, type QuantFormat } from '../../workers/engine/backend/quant';
import { seededRandom } from '../../workers/engine/analysis/sampling';

/**
 * The thread pool's split of a product (backend/gemm_threads.ts) must not change a bit, whatever
 * the team: every split of the w rows into shares (not only the pool's multiples of 4), every team
 * composition (helpers left out of some calls, as before they start), and no helper may take a
 * share of a call it was not enrolled in (the enrolled slots carry the call's generation).
 */

const mod = new WebAssembly.Module(Buffer.from(GEMM_SHARED_WASM_BASE64, 'base64'));
const rnd = seededRandom(11);
const randn = (len: number) => Float32Array.from({ length: len }, () => rnd() * 2 - 1);

type Kind = 'f32' | QuantFormat;
const KIND: Record<Kind, number> = { f32: 0, q8_0: 1, q4_0: 2 };

/** A shared memory with one instance of the module, and a product laid out in it (x, w or its quants, y). */
function setup(memory: WebAssembly.Memory, kind: Kind, n: number, k: number, m: number) {
  const ex = new WebAssembly.Instance(mod, { env: { memory } }).exports as Record<string, (...a: number[]) => void>;
  const f = new Float32Array(memory.buffer), i32 = new Int32Array(memory.buffer);
  const X = CONTROL_BYTES, W = X + 64 * Math.ceil((n * k * 4) / 64), w = randn(m * k);
  f.set(randn(n * k), X / 4);
  let args: number[], wEnd: number;
  if (kind === 'f32') {
    f.set(w, W / 4);
    wEnd = W + m * k * 4;
  } else {
    const q = quantise(kind, w, m, k);
    i32.set(q.words, W / 4);
    wEnd = W + q.words.length * 4;
  }
  const Y = 64 * Math.ceil(wEnd / 64), Y2 = Y + 64 * Math.ceil((n * m * 4) / 64);
  const bias = randn(m);
  const init = (y: number) => { for (let r = 0; r < n; r++) f.set(bias, y / 4 + r * m); };
  const argsAt = (y: number) => (kind === 'f32' ? [X, k, W, k, y, m, n, k, m] : [X, k, W, W + 4 * scaleOffset(kind, m, k), y, m, n, k / 32, m]);
  args = argsAt(Y);
  // the whole product by the driver alone (one thread)
  init(Y);
  if (kind === 'f32') ex.gemm(...args);
  else ex[kind === 'q8_0' ? 'q8gemm' : 'q4gemm'](args[0], args[1], args[2], args[3], args[7], args[4], args[5], args[6], args[8]);
  return { ex, f, i32, whole: f.slice(Y / 4, Y / 4 + n * m), args: argsAt(Y2), init: () => init(Y2), y2: () => f.subarray(Y2 / 4, Y2 / 4 + n * m) };
}

/** Indices where a and b differ as bit patterns. */
function bitDiffs(a: Float32Array, b: Float32Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) d++;
  return d;
}

describe('splits of a product between threads', () => {
  it('every split of the w rows into 2 or 3 shares (any boundaries, odd m, m mod 4 ≠ 0, n = 1…17, k tails) gives the bits of the whole product: f32, Q8_0, Q4_0', () => {
    const memory = new WebAssembly.Memory({ initial: 32, maximum: 64, shared: true });
    let checked = 0;
    const kinds: [Kind, number[]][] = [['f32', [3, 17, 64]], ['q8_0', [32, 64]], ['q4_0', [32, 64]]];
    for (const [kind, ks] of kinds) for (const k of ks) for (let n = 1; n <= 17; n++) for (const m of [1, 2, 3, 5, 6, 7, 9, 13]) {
      const { ex, i32, whole, args, init, y2 } = setup(memory, kind, n, k, m);
      for (let a = 0; a <= m; a++) for (let b = a; b <= m; b++) {
        // shares [0, a), [a, b), [b, m) through part() as the threads run them (here one after another, last first)
        init();
        i32[2] = KIND[kind];
        i32.set(args, 3);
        const cuts = [0, a, b, m];
        for (let t = 2; t >= 0; t--) {
          i32[16] = cuts[t];
          i32[17] = cuts[t + 1];
          ex.part(0, 0);
        }
        const d = bitDiffs(y2(), whole);
        if (d) expect(d, `${kind} n ${n} k ${k} m ${m} shares ${cuts.join(',')}`).toBe(0);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10_000);
  });
});

describe.skipIf(!threadsAvailable())('GemmThreads: team compositions', () => {
  it('helpers left out of some calls (every team of 3 threads, in turn): every product bit-identical, each enrolled helper counted once', async () => {
    const memory = new WebAssembly.Memory({ initial: 32, maximum: 64, shared: true });
    const pool = new GemmThreads({}, mod, memory, 3);
    await pool.whenStarted();
    const part = (new WebAssembly.Instance(mod, { env: { memory } }).exports.part as (c: number, t: number) => void);
    let expected = pool.helperParts();
    try {
      for (let call = 0; call < 240; call++) {
        const kind: Kind = (['f32', 'q8_0', 'q4_0'] as const)[call % 3];
        const n = 1 + (call % 17), k = kind === 'f32' ? 17 + 47 * (call % 2) : 64, m = [5, 9, 13, 30, 64][call % 5];
        const { whole, args, init, y2 } = setup(memory, kind, n, k, m);
        const out = [(call >> 1) % 2 === 1, (call >> 2) % 2 === 1]; // helpers 1, 2 left out
        out.forEach((o, i) => pool.leaveOut(i + 1, o));
        const team = 1 + out.filter((o) => !o).length;
        init();
        pool.run(part, KIND[kind], args, m);
        expect(bitDiffs(y2(), whole), `call ${call}: ${kind} n ${n} k ${k} m ${m}, team of ${team}`).toBe(0);
        expected += team - 1; // each enrolled helper once (an empty share too), no other
        expect(pool.helperParts(), `call ${call}: shares taken by helpers`).toBe(expected);
      }
    } finally {
      pool.stop();
    }
  });

  it('a helper left out of one call does not take a share of the next (its enrolled slot names the next call\'s generation only)', async () => {
    const memory = new WebAssembly.Memory({ initial: 32, maximum: 64, shared: true });
    const pool = new GemmThreads({}, mod, memory, 3);
    await pool.whenStarted();
    const ctl = new Int32Array(memory.buffer, 0, CONTROL_BYTES / 4);
    const part = (new WebAssembly.Instance(mod, { env: { memory } }).exports.part as (c: number, t: number) => void);
    const { whole, args, init, y2 } = setup(memory, 'f32', 5, 64, 40);
    const seen: number[] = [];
    try {
      // call k: helper 2 left out (as before it has started). In the caller's share (after the
      // generation is bumped) the rule a helper applies on waking for generation k:
      pool.leaveOut(2);
      init();
      pool.run((c, t) => {
        const g = Atomics.load(ctl, 0);
        seen.push(g);
        expect(joins(ctl, 1, g)).toBe(true);
        expect(joins(ctl, 2, g)).toBe(false);
        part(c, t);
      }, 0, args, 40);
      expect(bitDiffs(y2(), whole)).toBe(0);
      // call k + 1 with helper 2 back: a helper 2 that woke for k and reads its slot only now (late,
      // on a loaded machine) must not join k + 1 under k's generation; it joins k + 1 once it sees k + 1
      pool.leaveOut(2, false);
      init();
      pool.run((c, t) => {
        const g = Atomics.load(ctl, 0);
        seen.push(g);
        expect(joins(ctl, 2, seen[0]), 'a helper still at the previous generation').toBe(false);
        expect(joins(ctl, 1, seen[0])).toBe(false);
        expect(joins(ctl, 2, g)).toBe(true);
        part(c, t);
      }, 0, args, 40);
      expect(seen[1]).toBe((seen[0] + 1) | 0);
      expect(bitDiffs(y2(), whole)).toBe(0);
    } finally {
      pool.stop();
    }
  });
});
