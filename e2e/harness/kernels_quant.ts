/**
 * The block-quantised linear kernels (ops/linear_quant.wgsl.ts: Q8_0, Q4_0) against the CPU
 * backend's linear over the same packed blocks (itself checked against the closed-form definitions
 * in tests/unit/quant.test.ts), on decode and prefill shapes, a row padded to whole blocks (in = 40),
 * rows wider than the GEMV's 32 lanes × 32 values, and the fused-linear entry point, which splits
 * back into separate ops for quantised weights. Its own random stream, so the cases before it in
 * kernels.ts keep their inputs.
 */
import type { Backend, Tensor } from '../../workers/engine/backend/backend';
import type { CpuBackend } from '../../workers/engine/backend/cpu';
import { quantise, type QuantFormat } from '../../workers/engine/backend/quant';
import type { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import { diff, randn, rng } from './compare';
import type { KernelCase } from './kernels';

const TOL = 1e-4;

/** Runs every quantised-linear case on `gpu` and `cpu`, appending one KernelCase per output to `cases`. */
export async function linearQuant(gpu: WebGpuBackend, cpu: CpuBackend, cases: KernelCase[]): Promise<void> {
  const rand = rng(11_2026);
  const shapes: [number, number, number][] = [[1, 64, 172], [1, 1088, 40], [3, 40, 33], [4, 64, 17], [9, 128, 70], [17, 96, 5]];
  for (const format of ['q8_0', 'q4_0'] as QuantFormat[]) {
    for (const [n, k, m] of shapes) {
      const x = randn(rand, n * k), q = quantise(format, randn(rand, m * k, 0.5), m, k), bias = randn(rand, m);
      for (const withBias of [false, true]) {
        const run = async (b: Backend): Promise<Float32Array> => {
          const xt = b.upload(x, [n, k]), w = b.uploadQuant(q), bt = withBias ? b.upload(bias, [m]) : undefined;
          const y = b.linear(xt, w, bt);
          const out = await b.read(y);
          for (const t of [xt, w, y, ...(bt ? [bt] : [])]) b.release(t);
          return out;
        };
        const d = diff(await run(gpu), await run(cpu));
        cases.push({ op: 'linear quant w', name: `x[${n},${k}]·${format}[${m},${k}]ᵀ${withBias ? '+b' : ''}`, maxAbs: d.maxAbs, maxErr: d.maxErr, tol: TOL, tuning: gpu.tuning });
      }
    }
    // decode through the fused entry point: RMSNorm prologue, gate·up, residual epilogue
    const n = 1, k = 64, m = 96;
    const x = randn(rand, n * k), g = randn(rand, k), r = randn(rand, n * m);
    const gate = quantise(format, randn(rand, m * k, 0.5), m, k), up = quantise(format, randn(rand, m * k, 0.5), m, k);
    const run = async (b: Backend): Promise<Float32Array> => {
      const xt = b.upload(x, [n, k]), gt = b.upload(g, [k]), rt = b.upload(r, [n, m]);
      const wg = b.uploadQuant(gate), wu = b.uploadQuant(up);
      const norm = { w: gt, eps: 1e-5, offset: 0 };
      let y: Tensor;
      if (b.fused) y = b.fused.linear(xt, wg, undefined, { norm, gateUp: { w: wu, act: 'silu' }, residual: rt });
      else {
        const xn = b.rmsNorm(xt, gt, 1e-5, 0), a = b.linear(xn, wg), u = b.linear(xn, wu), act = b.gatedAct(a, u, 'silu');
        y = b.add(act, rt);
        for (const t of [xn, a, u, act]) b.release(t);
      }
      const out = await b.read(y);
      for (const t of [xt, gt, rt, wg, wu, y]) b.release(t);
      return out;
    };
    const d = diff(await run(gpu), await run(cpu));
    cases.push({ op: 'linear fused quant w', name: `rms(x[1,64])·${format} silu(gate)·up + r`, maxAbs: d.maxAbs, maxErr: d.maxErr, tol: TOL, tuning: gpu.tuning });
  }
}
