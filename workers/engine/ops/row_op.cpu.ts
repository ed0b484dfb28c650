import type { RowGroups, RowOp } from '../backend/backend';

function dot(a: Float32Array, ao: number, b: Float32Array, bo: number, w: number): number {
  let s = 0;
  for (let i = 0; i < w; i++) s += a[ao + i] * b[bo + i];
  return s;
}

/**
 * Applies a steering op (DESIGN.md §2) to each selected row of x [n, w]; unselected rows are copied.
 * - add: h + αv (Turner et al. 2023, arXiv 2308.10248).
 * - add_norm_preserving: (h + αv)·‖h‖/‖h + αv‖, computed as s·‖h‖/‖s‖ with s = h/k + (α/k)v,
 *   k = max(1, |α|), so a dose of 1e39 gives ‖h‖·v̂ instead of 0 (scale before squaring).
 * - rotate: spherical steering in the plane of (h, v): ĥ moves along the great circle toward v̂
 *   by θ, or by t·∠(h, v); ‖h‖ kept (You et al. 2026, arXiv 2602.08169).
 * - project_out: h − (h·v̂)v̂ (directional ablation, Arditi et al. 2024, arXiv 2406.11717).
 * - set: h ← v (zero / mean ablation). patch: h ← replacement row (activation patching).
 */
export function rowOpCpu(x: Float32Array, width: number, op: RowOp, rows: Uint8Array, groups?: RowGroups): Float32Array {
  if (!groups) return rowOpSegments(x, width, op, rows, [0], width);
  return rowOpSegments(x, width, op, rows, groups.indices.map((h) => h * groups.size), groups.size);
}

/** The op on segments [off, off+w) of each selected row, for every offset in `offsets`. */
function rowOpSegments(x: Float32Array, width: number, op: RowOp, rows: Uint8Array, offsets: number[], w: number): Float32Array {
  const y = new Float32Array(x);
  const n = x.length / width;
  const v = op.kind === 'patch' ? undefined : op.v;
  const vv = v ? dot(v, 0, v, 0, w) : 0;
  for (let r = 0; r < n; r++) {
    if (!rows[r]) continue;
    for (const off of offsets) {
      const o = r * width + off;
      switch (op.kind) {
        case 'add':
          for (let i = 0; i < w; i++) y[o + i] = x[o + i] + op.alpha * op.v[i];
          break;
        case 'add_norm_preserving': {
          // s = h/k + (α/k)·v with k = max(1, |α|): the direction of h + αv without overflow for any
          // finite dose (the scale cancels in the ratio ‖h‖/‖s‖), as the WGSL kernel computes it.
          const hn = Math.sqrt(dot(x, o, x, o, w));
          const k = Math.max(1, Math.abs(op.alpha)), ak = op.alpha / k;
          const s = new Float64Array(w);
          let sn = 0;
          for (let i = 0; i < w; i++) { s[i] = x[o + i] / k + ak * op.v[i]; sn += s[i] * s[i]; }
          const f = sn > 0 ? hn / Math.sqrt(sn) : 0;
          for (let i = 0; i < w; i++) y[o + i] = s[i] * f;
          break;
        }
        case 'rotate': {
          const hn = Math.sqrt(dot(x, o, x, o, w));
          const vn = Math.sqrt(vv);
          if (hn === 0 || vn === 0) break;
          const cos = Math.max(-1, Math.min(1, dot(x, o, op.v, 0, w) / (hn * vn)));
          const angle = Math.acos(cos);
          const theta = op.theta ?? (op.t ?? 0) * angle;
          // Orthonormal basis of the plane: e1 = ĥ, e2 = unit(v̂ − (v̂·ĥ)ĥ).
          let e2n = 0;
          const e2 = new Float64Array(w);
          for (let i = 0; i < w; i++) { e2[i] = op.v[i] / vn - cos * x[o + i] / hn; e2n += e2[i] * e2[i]; }
          e2n = Math.sqrt(e2n);
          if (e2n < 1e-12) break; // h already parallel or antiparallel to v: the plane is undefined
          const c = Math.cos(theta), s = Math.sin(theta);
          for (let i = 0; i < w; i++) y[o + i] = hn * (c * x[o + i] / hn + s * e2[i] / e2n);
          break;
        }
        case 'project_out': {
          if (vv === 0) break;
          const f = dot(x, o, op.v, 0, w) / vv;
          for (let i = 0; i < w; i++) y[o + i] = x[o + i] - f * op.v[i];
          break;
        }
        case 'set':
          for (let i = 0; i < w; i++) y[o + i] = op.v[i];
          break;
        case 'patch':
          for (let i = 0; i < w; i++) y[o + i] = op.replacement[o + i];
          break;
      }
    }
  }
  return y;
}
