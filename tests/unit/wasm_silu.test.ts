import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { gatedActCpu } from '../../workers/engine/ops/activation.cpu';
import { seededRandom } from '../../workers/engine/analysis/sampling';

/**
 * The CPU backend's gated SiLU (SwiGLU, silu(gate)·up) in WASM SIMD (tools/wasm/silu_wat.ts, f64x2
 * lanes): bit-identical to the TypeScript definition (ops/activation.cpu.ts with exp64, fdlibm's
 * e^x) on every branch of fdlibm's argument reduction, and within f32 rounding of x/(1 + e^−x)·up
 * computed here with Math.exp.
 */

const rnd = seededRandom(5);
const LN2 = Math.LN2;
const f32 = (x: number) => Math.fround(x);
const next = (x: number, dir: 1 | -1) => { const b = new Float32Array([x]); new Int32Array(b.buffer)[0] += dir * (x >= 0 ? 1 : -1); return b[0]; };

/** Gate values on every branch of exp64: |x| ≤ ½ln2 (k = 0), up to 1.5ln2 (k = ±1), beyond, the branch edges ±1 ulp, and the values it hands to Math.exp. */
function gates(): number[] {
  const edges = [0.5 * LN2, 1.5 * LN2, 0.34657359027997264, 1.0397207708399179].flatMap((e) => [f32(e), next(f32(e), 1), next(f32(e), -1)]);
  const special = [0, -0, 1e-10, -1e-10, 3.725290298461914e-9, 707.9, -707.9, 708, -708, 800, -800, 1e30, -1e30, Infinity, -Infinity, NaN, 1e-45];
  const random = Array.from({ length: 4000 }, (_, i) => (rnd() * 2 - 1) * [0.3, 1, 3, 12, 80, 700][i % 6]);
  return [...edges, ...edges.map((x) => -x), ...special, ...random];
}

describe('gated SiLU in WASM SIMD', () => {
  it.each([[false], [true]])('is bit-identical to the TypeScript definition on every branch of the reduction (odd length: %s)', async (odd) => {
    const g = Float32Array.from(gates()), n = g.length % 2 === (odd ? 1 : 0) ? g.length : g.length - 1;
    const gate = g.subarray(0, n), up = Float32Array.from({ length: n }, () => rnd() * 4 - 2);
    const b = new CpuBackend();
    const got = await b.read(b.gatedAct(b.upload(gate, [1, n]), b.upload(up, [1, n]), 'silu'));
    const want = gatedActCpu(gate, up, 'silu');
    expect(n % 2).toBe(odd ? 1 : 0);
    expect(got).toEqual(want); // toEqual treats NaN as equal to NaN and tells +0 from −0
  });

  it('equals x/(1 + e^−x)·up from Math.exp within f32 rounding', async () => {
    const n = 2000, gate = Float32Array.from({ length: n }, () => (rnd() * 2 - 1) * 20), up = Float32Array.from({ length: n }, () => rnd() * 2 - 1);
    const b = new CpuBackend();
    const got = await b.read(b.gatedAct(b.upload(gate, [4, n / 4]), b.upload(up, [4, n / 4]), 'silu'));
    for (let i = 0; i < n; i++) {
      const want = gate[i] / (1 + Math.exp(-gate[i])) * up[i];
      expect(Math.abs(got[i] - want)).toBeLessThanOrEqual(Math.abs(want) * 2 ** -23 + 1e-45);
    }
  });
});
