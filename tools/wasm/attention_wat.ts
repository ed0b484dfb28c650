/**
 * WebAssembly text of the CPU backend's attention dots (ops/attention.cpu.ts AttentionDots), part of
 * the module of tools/wasm/gemm_wat.ts. The arithmetic is the TypeScript loops' exactly, in float64
 * lanes (f64x2): products of f32 values promoted to f64 (exact), sums in the same order, so the
 * results are bit-identical to jsAttentionDots. Head dims must be a multiple of 4 (the caller keeps
 * the TypeScript loops otherwise). Pointers are byte offsets into the imported memory, strides in bytes.
 *
 *   attn_scores(q, qd, k, ldk, s, cnt, d, scale): s[j] (f64) = (q · k_j)·scale for j < cnt, k_j at
 *     k + j·ldk; q (d f32) is first promoted into qd (d f64 of scratch). Partial sums a0..a3 over
 *     e ≡ 0..3 (mod 4) are lanes (0, 1) of A and of B; s = ((a0 + a1) + (a2 + a3))·scale.
 *   attn_mix(s, v, ldv, cnt, d, z): z[e] (f32) = Σ_{j<cnt} s[j]·v_j[e] summed in f64 in order of j
 *     (v_j at v + j·ldv), 8 dims at a time in four f64x2 accumulators (then 4).
 */

/** v128 → the f64x2 of its f32 lanes 2, 3. */
const HIGH = (v: string) => `(f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 ${v} ${v}))`;
const LOW = (v: string) => `(f64x2.promote_low_f32x4 ${v})`;

const SCORES = `
(func (export "attn_scores") (param $q i32) (param $qd i32) (param $k i32) (param $ldk i32) (param $s i32) (param $cnt i32) (param $d i32) (param $scale f64)
  (local $e i32) (local $end i32) (local $j i32) (local $a v128) (local $b v128) (local $kv v128) (local $qv v128)
  (local.set $end (i32.shl (local.get $d) (i32.const 2)))
  ;; q promoted to f64 once: qd[e] for e < d
  (block $pd (loop $pl
    (br_if $pd (i32.ge_u (local.get $e) (local.get $end)))
    (local.set $qv (v128.load (i32.add (local.get $q) (local.get $e))))
    (v128.store (i32.add (local.get $qd) (i32.shl (local.get $e) (i32.const 1))) ${LOW('(local.get $qv)')})
    (v128.store offset=16 (i32.add (local.get $qd) (i32.shl (local.get $e) (i32.const 1))) ${HIGH('(local.get $qv)')})
    (local.set $e (i32.add (local.get $e) (i32.const 16)))
    (br $pl)))
  (block $jd (loop $jl
    (br_if $jd (i32.ge_u (local.get $j) (local.get $cnt)))
    (local.set $a (v128.const i64x2 0 0))
    (local.set $b (v128.const i64x2 0 0))
    (local.set $e (i32.const 0))
    (block $ed (loop $el
      (br_if $ed (i32.ge_u (local.get $e) (local.get $end)))
      (local.set $kv (v128.load (i32.add (local.get $k) (local.get $e))))
      (local.set $a (f64x2.add (local.get $a) (f64x2.mul (v128.load (i32.add (local.get $qd) (i32.shl (local.get $e) (i32.const 1)))) ${LOW('(local.get $kv)')})))
      (local.set $b (f64x2.add (local.get $b) (f64x2.mul (v128.load offset=16 (i32.add (local.get $qd) (i32.shl (local.get $e) (i32.const 1)))) ${HIGH('(local.get $kv)')})))
      (local.set $e (i32.add (local.get $e) (i32.const 16)))
      (br $el)))
    (f64.store (i32.add (local.get $s) (i32.shl (local.get $j) (i32.const 3)))
      (f64.mul
        (f64.add
          (f64.add (f64x2.extract_lane 0 (local.get $a)) (f64x2.extract_lane 1 (local.get $a)))
          (f64.add (f64x2.extract_lane 0 (local.get $b)) (f64x2.extract_lane 1 (local.get $b))))
        (local.get $scale)))
    (local.set $k (i32.add (local.get $k) (local.get $ldk)))
    (local.set $j (i32.add (local.get $j) (i32.const 1)))
    (br $jl)))
)`;

/** The mix over j for a block of 4·W dims (W = 1 or 2 f32x4 per row of v) at byte offset $e. */
function mixBlock(W: 1 | 2): string {
  const accs = Array.from({ length: 2 * W }, (_, i) => `$c${i}`);
  const lines: string[] = [];
  for (const c of accs) lines.push(`      (local.set ${c} (v128.const i64x2 0 0))`);
  lines.push('      (local.set $j (i32.const 0))');
  lines.push('      (local.set $vp (i32.add (local.get $v) (local.get $e)))');
  lines.push('      (block $jd (loop $jl');
  lines.push('        (br_if $jd (i32.ge_u (local.get $j) (local.get $cnt)))');
  lines.push('        (local.set $p (f64x2.splat (f64.load (i32.add (local.get $s) (i32.shl (local.get $j) (i32.const 3))))))');
  for (let w = 0; w < W; w++) {
    lines.push(`        (local.set $vv (v128.load offset=${16 * w} (local.get $vp)))`);
    lines.push(`        (local.set ${accs[2 * w]} (f64x2.add (local.get ${accs[2 * w]}) (f64x2.mul (local.get $p) ${LOW('(local.get $vv)')})))`);
    lines.push(`        (local.set ${accs[2 * w + 1]} (f64x2.add (local.get ${accs[2 * w + 1]}) (f64x2.mul (local.get $p) ${HIGH('(local.get $vv)')})))`);
  }
  lines.push('        (local.set $vp (i32.add (local.get $vp) (local.get $ldv)))');
  lines.push('        (local.set $j (i32.add (local.get $j) (i32.const 1)))');
  lines.push('        (br $jl)))');
  for (let w = 0; w < W; w++) {
    // two f64x2 rounded to f32 (round to nearest even, as a Float32Array store) into one f32x4
    lines.push(`      (v128.store offset=${16 * w} (i32.add (local.get $z) (local.get $e)) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (f32x4.demote_f64x2_zero (local.get ${accs[2 * w]})) (f32x4.demote_f64x2_zero (local.get ${accs[2 * w + 1]}))))`);
  }
  return lines.join('\n');
}

const MIX = `
(func (export "attn_mix") (param $s i32) (param $v i32) (param $ldv i32) (param $cnt i32) (param $d i32) (param $z i32)
  (local $e i32) (local $end i32) (local $end8 i32) (local $j i32) (local $vp i32) (local $p v128) (local $vv v128)
  (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
  (local.set $end (i32.shl (local.get $d) (i32.const 2)))
  (local.set $end8 (i32.and (local.get $end) (i32.const -32)))
  (block $ed (loop $el
    (br_if $ed (i32.ge_u (local.get $e) (local.get $end8)))
${mixBlock(2)}
    (local.set $e (i32.add (local.get $e) (i32.const 32)))
    (br $el)))
  (if (i32.lt_u (local.get $e) (local.get $end))
    (then
${mixBlock(1)}))
)`;

/** The attention functions' text, spliced into the module of gemm_wat.ts. */
export function attentionWat(): string {
  return SCORES + MIX;
}
