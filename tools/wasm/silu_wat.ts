/**
 * WebAssembly text of the CPU backend's gated SiLU (SwiGLU's act(gate)·up, Shazeer 2020,
 * arXiv:2002.05202; HF hidden_act "silu"), part of the module of tools/wasm/gemm_wat.ts. Two values
 * per step in float64 lanes (f64x2), with exactly the operations of ops/activation.cpu.ts
 * (y = f32(x / (1 + e^−x) · up), e^x by ops/exp64.ts, fdlibm's algorithm), so the results are
 * bit-identical to gatedActCpu; the SIMD form only removes fdlibm's branches:
 * - |x| ≤ ½ln2 (k = 0, fdlibm returns 1 − ((x·c)/(c − 2) − x)) takes the general formula with
 *   k = 0, hi = x, lo = +0: 1 − ((0 − (x·c)/(2 − c)) − x) is the same value (c − 2 = −(2 − c) and
 *   round-to-nearest is symmetric; 0 − q = −q up to the sign of a zero, which − x then absorbs);
 * - ½ln2 < |x| < 1.5ln2 (k = ±1) and beyond (k = trunc(x/ln2 ± ½)) use the same hi, lo as fdlibm;
 * - 2^k is built from its exponent bits (exact for k in [−1022, 1023]).
 *
 *   silu_mul(g, u, y, n): y[i] = f32(g[i] / (1 + e^(−g[i])) · u[i]) for i < n (n even; f32 arrays
 *     at byte offsets g, u, y). Returns 1 when some −g[i] lies outside fdlibm's reduced range
 *     (|·| ≥ 708, |·| < 2⁻²⁸ or NaN): those elements are then wrong and the caller recomputes them
 *     with Math.exp (exp64 does the same); else 0.
 */

const C = {
  INV_LN2: '1.44269504088896338700e+00',
  LN2_HI: '6.93147180369123816490e-01',
  LN2_LO: '1.90821492927058770002e-10',
  P1: '1.66666666666666019037e-01',
  P2: '-2.77777777770155933842e-03',
  P3: '6.61375632143793436117e-05',
  P4: '-1.65339022054652515390e-06',
  P5: '4.13813679705723846039e-08',
} as const;

const splat = (v: string) => `(v128.const f64x2 ${v} ${v})`;
const get = (name: string) => `(local.get $${name})`;

export function siluWat(): string {
  return `
(func (export "silu_mul") (param $g i32) (param $u i32) (param $y i32) (param $n i32) (result i32)
  (local $p i32) (local $end i32) (local $bad v128)
  (local $x v128) (local $a v128) (local $ax v128) (local $pos v128) (local $k v128) (local $hi v128) (local $lo v128)
  (local $r v128) (local $t v128) (local $c v128) (local $e v128)
  (local.set $end (i32.shl (local.get $n) (i32.const 2)))
  (local.set $bad (v128.const i64x2 0 0))
  (block $done (loop $each
    (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
    (local.set $x (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $g) (local.get $p)))))
    ;; a = −x: e^a by exp64's operations
    (local.set $a (f64x2.neg ${get('x')}))
    (local.set $ax (f64x2.abs ${get('a')}))
    ;; lanes outside (2⁻²⁸ ≤ |a| < 708) (NaN included) are flagged for the caller
    (local.set $bad (v128.or ${get('bad')} (v128.not (v128.and (f64x2.lt ${get('ax')} ${splat('708')}) (f64x2.ge ${get('ax')} ${splat('3.725290298461914e-9')})))))
    (local.set $pos (f64x2.gt ${get('a')} ${splat('0')}))
    (local.set $k
      (v128.bitselect
        (v128.bitselect
          (v128.bitselect ${splat('1')} ${splat('-1')} ${get('pos')})
          (f64x2.trunc (f64x2.add (f64x2.mul ${splat(C.INV_LN2)} ${get('a')}) (v128.bitselect ${splat('0.5')} ${splat('-0.5')} ${get('pos')})))
          (f64x2.lt ${get('ax')} ${splat('1.0397207708399179')}))
        ${splat('0')}
        (f64x2.gt ${get('ax')} ${splat('0.34657359027997264')})))
    (local.set $hi (f64x2.sub ${get('a')} (f64x2.mul ${get('k')} ${splat(C.LN2_HI)})))
    (local.set $lo (f64x2.mul ${get('k')} ${splat(C.LN2_LO)}))
    (local.set $r (f64x2.sub ${get('hi')} ${get('lo')}))
    (local.set $t (f64x2.mul ${get('r')} ${get('r')}))
    (local.set $c (f64x2.sub ${get('r')} (f64x2.mul ${get('t')}
      (f64x2.add ${splat(C.P1)} (f64x2.mul ${get('t')} (f64x2.add ${splat(C.P2)} (f64x2.mul ${get('t')} (f64x2.add ${splat(C.P3)} (f64x2.mul ${get('t')} (f64x2.add ${splat(C.P4)} (f64x2.mul ${get('t')} ${splat(C.P5)})))))))))))
    ;; e = (1 − ((lo − (r·c)/(2 − c)) − hi))·2^k, 2^k from the exponent bits (k + 1023) << 52
    (local.set $e (f64x2.mul
      (f64x2.sub ${splat('1')} (f64x2.sub (f64x2.sub ${get('lo')} (f64x2.div (f64x2.mul ${get('r')} ${get('c')}) (f64x2.sub ${splat('2')} ${get('c')}))) ${get('hi')}))
      (i64x2.shl (i64x2.add (i64x2.extend_low_i32x4_s (i32x4.trunc_sat_f64x2_s_zero ${get('k')})) (v128.const i64x2 1023 1023)) (i32.const 52))))
    ;; y = f32(x / (1 + e) · u)
    (v128.store64_lane 0 (i32.add (local.get $y) (local.get $p))
      (f32x4.demote_f64x2_zero (f64x2.mul
        (f64x2.div ${get('x')} (f64x2.add ${splat('1')} ${get('e')}))
        (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $u) (local.get $p)))))))
    (local.set $p (i32.add (local.get $p) (i32.const 8)))
    (br $each)))
  (v128.any_true ${get('bad')})
)`;
}
