import type { Tensor } from '../backend/backend';
import { Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { wgslWeight } from './wgsl_math';

/** Tile edge: a 16×16 workgroup computes a 16×16 tile of dx. */
const TILE = 16;

/**
 * dx [n, in] (+)= dy[:, o0 .. o0 + rows) · W [rows, in] for one row part of W: each invocation owns
 * dx[t, i]; the workgroup walks the shared dimension in tiles of 16 (dy and W tiles in workgroup
 * memory). `acc` = 1 adds to dx (the later parts of a weight split by rows).
 */
const source = (f16: boolean): string => /* wgsl */ `
struct P { n: u32, nIn: u32, ldy: u32, o0: u32, rows: u32, acc: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
${wgslWeight(2, 'w', 'wv', f16)}
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;
var<workgroup> ta: array<array<f32, ${TILE}>, ${TILE}>;
var<workgroup> tb: array<array<f32, ${TILE}>, ${TILE}>;
@compute @workgroup_size(${TILE}, ${TILE})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = wid.x * ${TILE}u + lid.x;
  let t = wid.y * ${TILE}u + lid.y;
  var s = 0.0;
  for (var o = 0u; o < p.rows; o = o + ${TILE}u) {
    let oa = o + lid.x;
    ta[lid.y][lid.x] = select(0.0, dy[t * p.ldy + p.o0 + oa], t < p.n && oa < p.rows);
    let ob = o + lid.y;
    tb[lid.y][lid.x] = select(0.0, wv(ob * p.nIn + i), ob < p.rows && i < p.nIn);
    workgroupBarrier();
    for (var k = 0u; k < ${TILE}u; k = k + 1u) { s = s + ta[lid.y][k] * tb[k][lid.x]; }
    workgroupBarrier();
  }
  if (t < p.n && i < p.nIn) {
    let at = t * p.nIn + i;
    dx[at] = select(s, dx[at] + s, p.acc == 1u);
  }
}`;

/**
 * The input gradient of a linear layer (Backend.linearBackward; CPU reference linearBackwardCpu):
 * dx [n, in] = dy [n, out] · W [out, in], W float32 or binary16 (read as stored), whole or split by
 * rows (each part adds its share). Quantised weights are not read here (the backend passes a
 * float32 copy).
 * @throws Error when dy's width differs from W's rows, or for a quantised W.
 */
export function linearBackwardGpu(host: KernelHost, dy: Tensor, w: Tensor): GpuTensor {
  const [nOut, nIn] = w.shape;
  const gd = host.gpu(dy);
  if (dy.shape[dy.shape.length - 1] !== nOut) throw new Error(`linearBackward: dy [${dy.shape}] has not the ${nOut} columns of weight [${w.shape}]`);
  const n = dy.size / nOut;
  const dx = host.alloc([n, nIn]);
  if (dx.size === 0) return dx;
  const parts = host.rowParts(w);
  parts.forEach(({ part, row0 }, k) => {
    if (part.dtype !== 'f32' && part.dtype !== 'f16') throw new Error(`linearBackward: weight [${w.shape}] is stored as ${part.dtype}; pass a float32 copy`);
    const f16 = part.dtype === 'f16';
    host.dispatch(host.pipeline(`linear_backward:${part.dtype}`, () => source(f16)), [gd, part, dx],
      new Params().u32(n).u32(nIn).u32(nOut).u32(row0).u32(part.shape[0]).u32(k > 0 ? 1 : 0), [Math.ceil(nIn / TILE), Math.ceil(n / TILE), 1]);
  });
  return dx;
}
