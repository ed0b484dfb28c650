import type { Tensor } from '../backend/backend';
import { scaleOffset } from '../backend/quant';
import type { GpuTensor, KernelHost } from '../backend/webgpu_host';
import { GEMV_MAX_ROWS } from './linear.wgsl';
import { dispatchGemv, GEMV_ROWS, plainVariant, reduction } from './linear_gemv.wgsl';

/** Whether a GPU tensor holds block-quantised storage. */
export function isQuantTensor(t: Tensor): boolean {
  const dtype = (t as { dtype?: unknown }).dtype;
  return dtype === 'q8_0' || dtype === 'q4_0';
}

/**
 * y [n, out] = x [n, in] · dequant(w)ᵀ + b for a block-quantised weight w [out, in]
 * (WebGpuBackend.uploadQuant; Q8_0 / Q4_0, backend/quant.ts): linear_gemv.wgsl.ts's kernels with
 * its quantised weight read, which dequantises in registers (d·q, d·(q − 8)), accumulating in
 * float32. Tuning 'gpu' with n ≤ GEMV_MAX_ROWS: the GEMV; otherwise the dot kernel with rows in
 * blocks of 1, 4 or 8 (four values per step when in % 4 = 0).
 * @throws Error when w is not quantised, x's row width is not `in`, b's size is not `out`, or the
 *   grid exceeds the device's workgroup limits.
 */
export function linearQuantGpu(host: KernelHost, x: Tensor, w: Tensor, bias?: Tensor): GpuTensor {
  const gx = host.gpu(x);
  const gw = host.gpu(w, true);
  const format = gw.dtype;
  if (format !== 'q8_0' && format !== 'q4_0') throw new Error(`linearQuant: weight [${w.shape}] is ${format}, not block-quantised`);
  const [nOut, nIn] = w.shape;
  if (x.shape[x.shape.length - 1] !== nIn) throw new Error(`linear: x has ${x.shape[x.shape.length - 1]} columns, weight expects ${nIn}`);
  if (bias && bias.size !== nOut) throw new Error(`linear: bias has ${bias.size} values, weight has ${nOut} outputs`);
  const gb = bias ? host.gpu(bias) : undefined;
  const n = x.size / nIn;
  const y = host.alloc([n, nOut]);
  if (y.size === 0) return y;
  const byName: Record<string, GpuTensor> = gb ? { x: gx, w: gw, b: gb, y } : { x: gx, w: gw, y };
  const shape = { n, nIn, rows: nOut, ldy: nOut, colOff: 0, s0: scaleOffset(format, nOut, nIn) };
  const gemv = host.tuning === 'gpu' && n <= GEMV_MAX_ROWS && Math.ceil(nOut / GEMV_ROWS) <= host.maxWorkgroupsPerDim;
  dispatchGemv(host, gemv ? 'gemv' : 'dot', plainVariant(format, !!gb, !gemv && nIn % 4 === 0, 'f32', reduction(host)), byName, shape);
  return y;
}
