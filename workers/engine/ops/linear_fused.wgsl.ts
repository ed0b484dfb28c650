import type { LinearFusion, Tensor } from '../backend/backend';
import type { GpuTensor, KernelHost } from '../backend/webgpu_host';
import { gatedActGpu } from './activation.wgsl';
import { addGpu } from './add.wgsl';
import { GEMV_MAX_ROWS } from './linear.wgsl';
import { computeType, dispatchGemv, reduction, type GemvVariant } from './linear_gemv.wgsl';

/**
 * Fused linear kernels for the few-row (decode) shapes, where a transformer block is bound by the
 * number of dispatches rather than by arithmetic: one dispatch computes
 *
 *   y = epilogue( prologue(x) · Wᵀ + b )
 *
 * with, each optional,
 * - prologue `norm`: RMSNorm of each row of x (Zhang & Sennrich 2019; HF LlamaRMSNorm), folded into
 *   the dot product: Σ_k (x_k·s·(g_k + offset))·W_ok = s·Σ_k x_k·(g_k + offset)·W_ok with
 *   s = 1/√(mean_k x_k² + eps), the sum of squares accumulated in the same pass over x;
 * - `gateUp`: a second weight U read in the same pass, y = act(x̂·Wᵀ + b)·(x̂·Uᵀ + c) (SwiGLU /
 *   GeGLU: Shazeer 2020, arXiv 2002.05202), W being the gate projection;
 * - epilogue `residual`: y += r (the residual stream: the block's output or resid_mid).
 *
 * Same numbers as the unfused ops up to float32 rounding order (the norm scale is applied after the
 * sum instead of before each product). The kernels are linear_gemv.wgsl.ts's skeleton: 'cpu'
 * tuning, its dot kernel (one invocation per output with a block of rows, no barriers, for
 * SwiftShader/lavapipe); 'gpu' tuning, its GEMV (n ≤ GEMV_MAX_ROWS).
 */

/**
 * Largest row count the fused kernels take: the GEMV's (decode and short appends). Larger prefills
 * are arithmetic-bound and keep the tiled/vectorised unfused kernels.
 */
export function fusedMaxRows(_host: KernelHost): number {
  return GEMV_MAX_ROWS;
}

/**
 * y = epilogue(prologue(x)·wᵀ + bias) in one dispatch per weight part (see the file comment).
 * @param x [n, in] float32, n ≤ fusedMaxRows(host).
 * @param w [out, in] (float32 or f16 storage, may be row-chunked unless `f.gateUp` is given).
 * @param f fusion options: `norm` {w [in], eps, offset}, `gateUp` {w [out, in], bias [out], act},
 *   `residual` [n, out].
 * @returns [n, out].
 * @throws Error on mismatched shapes, a row count above fusedMaxRows, or a grid over the device's
 *   workgroup limits. (With `gateUp` and a weight split across buffers, gate and up run as two
 *   passes and one gatedAct.)
 */
export function linearFusedGpu(host: KernelHost, x: Tensor, w: Tensor, bias: Tensor | undefined, f: LinearFusion): GpuTensor {
  const gx = host.gpu(x);
  if (w.shape.length !== 2) throw new Error(`linearFused: weight must be [out, in], got [${w.shape}]`);
  const [nOut, nIn] = w.shape;
  if (x.shape[x.shape.length - 1] !== nIn) throw new Error(`linearFused: x has ${x.shape[x.shape.length - 1]} columns, weight expects ${nIn}`);
  const n = x.size / nIn;
  if (n > fusedMaxRows(host)) throw new Error(`linearFused: ${n} rows exceed the fused kernels' ${fusedMaxRows(host)}`);
  if (bias && bias.size !== nOut) throw new Error(`linearFused: bias has ${bias.size} values, weight has ${nOut} outputs`);
  if (f.norm && f.norm.w.size !== nIn) throw new Error(`linearFused: norm weight has ${f.norm.w.size} values, x has ${nIn} columns`);
  if (f.residual && f.residual.size !== n * nOut) throw new Error(`linearFused: residual [${f.residual.shape}] is not [${n}, ${nOut}]`);
  const parts = host.rowParts(w);
  const up = f.gateUp ? host.rowParts(f.gateUp.w) : null;
  if (f.gateUp) {
    if (f.gateUp.w.shape[0] !== nOut || f.gateUp.w.shape[1] !== nIn) throw new Error(`linearFused: up weight [${f.gateUp.w.shape}] differs from the gate's [${w.shape}]`);
    if (f.gateUp.bias && f.gateUp.bias.size !== nOut) throw new Error(`linearFused: up bias has ${f.gateUp.bias.size} values, weight has ${nOut} outputs`);
    if (parts.length > 1 || up!.length > 1) {
      // a weight split across buffers (ChunkedTensor): gate and up each in their own (norm-fused) pass
      const g = linearFusedGpu(host, x, w, bias, { norm: f.norm });
      const u = linearFusedGpu(host, x, f.gateUp.w, f.gateUp.bias, { norm: f.norm });
      let y = gatedActGpu(host, g, u, f.gateUp.act);
      host.release(g); host.release(u);
      if (f.residual) { const sum = addGpu(host, y, f.residual); host.release(y); y = sum; }
      return y;
    }
  }
  const y = host.alloc([n, nOut]);
  if (y.size === 0) return y;
  for (const { part, row0 } of parts) {
    const v: GemvVariant = {
      w: part.dtype, bias: !!bias, norm: !!f.norm, gated: f.gateUp?.act ?? null,
      u: up?.[0].part.dtype ?? 'f32', upBias: !!f.gateUp?.bias, residual: !!f.residual,
      vec4: host.tuning === 'cpu' && nIn % 4 === 0, compute: f.gateUp && up![0].part.dtype !== part.dtype ? 'f32' : computeType(host, part.dtype), reduce: reduction(host),
    };
    const byName: Record<string, GpuTensor> = { x: gx, w: part, y };
    if (bias) byName.b = host.gpu(bias);
    if (f.norm) byName.g = host.gpu(f.norm.w);
    if (up) byName.u = up[0].part;
    if (f.gateUp?.bias) byName.c = host.gpu(f.gateUp.bias);
    if (f.residual) byName.r = host.gpu(f.residual);
    dispatchGemv(host, host.tuning === 'cpu' ? 'dot' : 'gemv', v, byName,
      { n, nIn, rows: part.shape[0], ldy: nOut, colOff: row0, eps: f.norm?.eps ?? 0, offset: f.norm?.offset ?? 0 });
  }
  return y;
}
