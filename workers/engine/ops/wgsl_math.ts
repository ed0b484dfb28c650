/**
 * WGSL helpers shared by the kernels. WGSL's built-in transcendental functions have loose accuracy
 * bounds (sin/cos: 2⁻¹¹ absolute on [−π, π] only; tanh: inherited from exp, with inf/inf = NaN
 * for large |x|), so the functions whose results are compared to float64 references at 1e-4 are
 * written out here with known error.
 */

/** Flat workgroup index over a 2-D grid made by `grid()` (webgpu_host.ts). */
export const WGSL_FLAT_GROUP = /* wgsl */ `
fn flat_group(wid: vec3u, nwg: vec3u) -> u32 { return wid.x + wid.y * nwg.x; }
`;

/**
 * A read-only weight binding `name` and its accessor `fn(i)` (flat element index → f32): float32,
 * or binary16 pairs packed in u32 words (backend/f16.ts layout: element 2i in the low half),
 * unpacked with core WGSL unpack2x16float (no 'shader-f16' needed).
 */
export function wgslWeight(binding: number, name: string, fn: string, f16: boolean): string {
  return f16
    ? `@group(0) @binding(${binding}) var<storage, read> ${name}: array<u32>;
fn ${fn}(i: u32) -> f32 { let pair = unpack2x16float(${name}[i >> 1u]); return select(pair.x, pair.y, (i & 1u) == 1u); }`
    : `@group(0) @binding(${binding}) var<storage, read> ${name}: array<f32>;
fn ${fn}(i: u32) -> f32 { return ${name}[i]; }`;
}

/**
 * As wgslWeight, read four consecutive values at a time: `fn(i)` returns elements 4i..4i+3 as a
 * vec4f (float32 vec4, or two packed binary16 words). The row width must be a multiple of 4.
 */
export function wgslWeightVec4(binding: number, name: string, fn: string, f16: boolean): string {
  return `@group(0) @binding(${binding}) var<storage, read> ${name}: array<${f16 ? 'vec2<u32>' : 'vec4f'}>;
fn ${fn}(i: u32) -> vec4f { ${f16 ? `let q = ${name}[i]; return vec4f(unpack2x16float(q.x), unpack2x16float(q.y));` : `return ${name}[i];`} }`;
}

/**
 * tanh: Cephes tanhf polynomial for |x| < 0.625 (relative error ~1e-7), else 1 − 2/(e^{2|x|} + 1),
 * which saturates to ±1 instead of producing NaN. (Moshier, Cephes Math Library, tanhf.c.)
 */
export const WGSL_TANH = /* wgsl */ `
fn tanh_acc(x: f32) -> f32 {
  let a = abs(x);
  if (a < 0.625) {
    let s = x * x;
    return ((((-5.70498872745e-3 * s + 2.06390887954e-2) * s - 5.37397155531e-2) * s + 1.33314422036e-1) * s - 3.33332819422e-1) * s * x + x;
  }
  let r = 1.0 - 2.0 / (exp(min(2.0 * a, 88.0)) + 1.0);
  return select(r, -r, x < 0.0);
}
`;

/**
 * erf from the Chebyshev fit of erfc in Numerical Recipes §6.2 (fractional error < 1.2e-7), the
 * same formula as the CPU reference (activation.cpu.ts).
 */
export const WGSL_ERF = /* wgsl */ `
fn erf_acc(x: f32) -> f32 {
  let z = abs(x);
  let t = 1.0 / (1.0 + 0.5 * z);
  let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return select(r - 1.0, 1.0 - r, x >= 0.0);
}
`;

/**
 * sin and cos together, Cephes sinf/cosf: reduction by π/4 in three parts (exact for |x| < 8192),
 * then minimax polynomials on [−π/4, π/4] (error ~1 ulp). Returns vec2(sin x, cos x).
 */
export const WGSL_SINCOS = /* wgsl */ `
fn sincos_acc(x: f32) -> vec2f {
  let ax = abs(x);
  var j = u32(ax * 1.27323954473516);
  var y = f32(j);
  if ((j & 1u) == 1u) { j = j + 1u; y = y + 1.0; }
  let q = j & 7u;
  let z = ((ax - y * 0.78515625) - y * 2.4187564849853515625e-4) - y * 3.77489497744594108e-8;
  let zz = z * z;
  let s = ((-1.9515295891e-4 * zz + 8.3321608736e-3) * zz - 1.6666654611e-1) * zz * z + z;
  let c = ((2.443315711809948e-5 * zz - 1.388731625493765e-3) * zz + 4.166664568298827e-2) * zz * zz - 0.5 * zz + 1.0;
  var r = vec2f(s, c);
  if (q == 2u) { r = vec2f(c, -s); }
  if (q == 4u) { r = vec2f(-s, -c); }
  if (q == 6u) { r = vec2f(-c, s); }
  if (x < 0.0) { r.x = -r.x; }
  return r;
}
`;

/**
 * acos on [−1, 1] via Cephes asinf (polynomial on |x| ≤ 0.5, half-angle identity above; relative
 * error ~2.5e-7).
 */
export const WGSL_ACOS = /* wgsl */ `
fn asin_acc(x: f32) -> f32 {
  let a = abs(x);
  var z: f32;
  var xx: f32;
  let big = a > 0.5;
  if (big) { z = 0.5 * (1.0 - a); xx = sqrt(z); } else { xx = a; z = a * a; }
  var p = ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z + 1.6666752422e-1) * z * xx + xx;
  if (big) { p = 1.5707963267948966 - (p + p); }
  return select(p, -p, x < 0.0);
}
fn acos_acc(x: f32) -> f32 {
  if (x < -0.5) { return 3.141592653589793 - 2.0 * asin_acc(sqrt(0.5 * (1.0 + x))); }
  if (x > 0.5) { return 2.0 * asin_acc(sqrt(0.5 * (1.0 - x))); }
  return 1.5707963267948966 - asin_acc(x);
}
`;
