import type { Tensor } from '../backend/backend';
import { linearSumShape } from '../backend/backend';
import { scaleOffset } from '../backend/quant';
import { Params, type GpuDtype, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { weightRead } from './linear_gemv.wgsl';

/** Tile edge: a 16×16 workgroup computes a 16×16 tile of dx. */
const TILE = 16;

/** One row block of the stacked weight: rows `rows` of buffer w, times dy's columns o0 .. o0 + rows (dy rows of width ldy). */
interface Part { dy: GpuTensor; ldy: number; o0: number; w: GpuTensor }

/**
 * dx [n, in] (+)= Σ_k dy_k[:, o0_k .. o0_k + rows_k) · W_k [rows_k, in] over the parts of one
 * dispatch: each invocation owns dx[t, i] and walks every part's shared dimension in tiles of 16
 * (dy and W tiles in workgroup memory), one sum in a register. W_k is read as stored: float32,
 * binary16 pairs, or Q8_0 / Q4_0 blocks dequantised in the tile load (linear_gemv.wgsl.ts
 * weightRead, element k of row o). `acc` = 1 adds to dx (a later dispatch of the same product).
 */
const source = (dtypes: readonly GpuDtype[]): string => {
  const K = dtypes.length;
  const fields = dtypes.map((_, k) => `ldy${k}: u32, o0${k}: u32, rows${k}: u32, s0${k}: u32`).join(', ');
  const decls = dtypes.map((dt, k) => `@group(0) @binding(${2 * k + 1}) var<storage, read> dy${k}: array<f32>;
${weightRead(2 * k + 2, `w${k}`, `wv${k}`, dt, false, 'f32', `s0${k}`)}`).join('\n');
  const loops = dtypes.map((_, k) => `
  for (var o = 0u; o < p.rows${k}; o = o + ${TILE}u) {
    let oa = o + lid.x;
    ta[lid.y][lid.x] = select(0.0, dy${k}[t * p.ldy${k} + p.o0${k} + oa], t < p.n && oa < p.rows${k});
    let ob = o + lid.y;
    tb[lid.y][lid.x] = select(0.0, wv${k}(ob, i), ob < p.rows${k} && i < p.nIn);
    workgroupBarrier();
    for (var k = 0u; k < ${TILE}u; k = k + 1u) { s = s + ta[lid.y][k] * tb[k][lid.x]; }
    workgroupBarrier();
  }`).join('');
  return /* wgsl */ `
struct P { n: u32, nIn: u32, acc: u32, ${fields} }
@group(0) @binding(0) var<uniform> p: P;
${decls}
@group(0) @binding(${2 * K + 1}) var<storage, read_write> dx: array<f32>;
var<workgroup> ta: array<array<f32, ${TILE}>, ${TILE}>;
var<workgroup> tb: array<array<f32, ${TILE}>, ${TILE}>;
@compute @workgroup_size(${TILE}, ${TILE})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = wid.x * ${TILE}u + lid.x;
  let t = wid.y * ${TILE}u + lid.y;
  var s = 0.0;${loops}
  if (t < p.n && i < p.nIn) {
    let at = t * p.nIn + i;
    dx[at] = select(s, dx[at] + s, p.acc == 1u);
  }
}`;
};

/**
 * The summed input gradients of linear layers on one input (Backend.linearBackwardSum; CPU
 * reference ops/linear_backward.cpu.ts): dx [n, in] = Σ_k dys[k] [n, out_k] · ws[k] [out_k, in],
 * each W read as stored (float32, binary16, Q8_0 / Q4_0 dequantised in the kernel: no float32 copy),
 * whole or split by rows. All parts go in one dispatch, as many as the device's storage bindings
 * allow (2 per part + dx; maxStorageBuffersPerShaderStage, 8 by default: 3 parts), further parts in
 * more dispatches that add to dx.
 * @throws Error as linearSumShape does.
 */
export function linearBackwardGpu(host: KernelHost, dys: readonly Tensor[], ws: readonly Tensor[], maxStorageBuffers = 8): GpuTensor {
  const { n, nIn, outs } = linearSumShape(dys, ws);
  const dx = host.alloc([n, nIn]);
  if (dx.size === 0) return dx;
  const parts: Part[] = [];
  ws.forEach((w, k) => {
    const dy = host.gpu(dys[k]);
    for (const { part, row0 } of host.rowParts(w)) parts.push({ dy, ldy: outs[k], o0: row0, w: part });
  });
  const per = Math.max(1, Math.floor((maxStorageBuffers - 1) / 2));
  for (let c = 0; c < parts.length; c += per) {
    const group = parts.slice(c, c + per), dtypes = group.map((q) => q.w.dtype);
    const params = new Params().u32(n).u32(nIn).u32(c > 0 ? 1 : 0);
    for (const q of group) {
      const quant = q.w.dtype === 'q8_0' || q.w.dtype === 'q4_0';
      params.u32(q.ldy).u32(q.o0).u32(q.w.shape[0]).u32(quant ? scaleOffset(q.w.dtype as 'q8_0' | 'q4_0', q.w.shape[0], nIn) : 0);
    }
    host.dispatch(host.pipeline(`linear_backward:${dtypes.join(',')}`, () => source(dtypes)), [...group.flatMap((q) => [q.dy, q.w]), dx], params,
      [Math.ceil(nIn / TILE), Math.ceil(n / TILE), 1]);
  }
  return dx;
}
