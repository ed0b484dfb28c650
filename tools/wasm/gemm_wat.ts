/**
 * WebAssembly text of the CPU backend's matrix kernels (WASM SIMD128), written out by small
 * generators so each register-blocked micro-kernel is spelled once. tools/build_wasm.ts assembles it
 * with wabt into workers/engine/ops/gemm.wasm.ts.
 *
 * Exports (all pointers are byte offsets into the imported memory, strides in f32 elements):
 *   gemm(x, ldx, w, ldw, y, ldy, n, k, m):  y[r, o] += Σ_i x[r, i]·w[o, i]   (r < n, o < m, i < k)
 * i.e. y += x·wᵀ with x [n, k] and w [m, k] in nn.Linear layout. The caller initialises y (zeros or
 * the bias). Row blocks of 4 x rows × 2 w rows keep 8 f32x4 accumulators (plus 6 loaded vectors)
 * within the 16 SIMD registers of x86-64 and AArch64's 32; the n mod 4 rows left over take 3×2, 2×2
 * or 1×2 blocks while the pair of w rows is in L1. Fewer than 4 x rows (decode's GEMV) take one w row
 * at a time (1 × 1), so w streams through memory in one sequential pass: measured on x86-64 (Zen 5,
 * V8 in Node 20 and Chromium 150), a GEMV reading 4 w rows side by side streams ~12–16 GB/s, one row
 * at a time ~27–33 GB/s. k is walked 4 floats at a time (16
 * per loop iteration, then 4), lane l of each accumulator summing the terms i ≡ l (mod 4) in order
 * of i; the k mod 4 tail in scalar f32.
 *
 *   q8gemm(x, ldx, q, s, bpr, y, ldy, n, m) / q4gemm(…): the same product with w block-quantised
 * (backend/quant.ts, ggml Q8_0 / Q4_0): q points at row 0's quants (bpr blocks per row, 32 / 16 bytes
 * each), s at row 0's binary16 scales (2 bytes per block), k = 32·bpr. The quants are widened in
 * registers (i8 → i16 → i32 → f32) and multiplied by the block's scale, which is exact (an 11-bit
 * significand times an integer of at most 8 bits), so every output is bit-identical to the f32
 * kernel on the dequantised matrix: same lanes, same order, same reduction.
 *   q8deq(q, s, blocks, dst) / q4deq(…): the blocks dequantised into f32 (prefill: slabs of rows for
 * gemm, which reuses each weight for n x rows).
 *
 * The module also holds the attention dots (tools/wasm/attention_wat.ts: attn_scores, attn_mix) and
 * the gated SiLU (tools/wasm/silu_wat.ts: silu_mul).
 *
 * Every output element's arithmetic is the same whichever block shape computes it, so splitting the
 * w rows between threads (backend/gemm_threads.ts) leaves the result bit-identical.
 */

import { attentionWat } from './attention_wat';
import { siluWat } from './silu_wat';

/**
 * Steps of 4 floats per iteration of the micro-kernels' main loop: the loads take constant offsets
 * from one address per row, so the loop issues fewer integer adds and branches per multiply (in
 * Chromium 150 on Zen 5 ~10–15 % more GFLOP/s than one step per iteration). The sums are the same,
 * in the same order.
 */
const UNROLL = 4;

/** One micro-kernel: an MR × NR block of dot products over k, added into y. */
function microKernel(MR: number, NR: number): string {
  const R = [...Array(MR).keys()], C = [...Array(NR).keys()];
  const acc = (i: number, j: number) => `$a${i}_${j}`;
  const tail = (i: number, j: number) => `$t${i}_${j}`;
  const lines: string[] = [];
  lines.push(`(func $k${MR}x${NR} (param $x i32) (param $ldx i32) (param $w i32) (param $ldw i32) (param $y i32) (param $ldy i32) (param $k i32)`);
  for (const i of R) for (const j of C) lines.push(`  (local ${acc(i, j)} v128) (local ${tail(i, j)} f32)`);
  for (const i of R) lines.push(`  (local $x${i} i32) (local $xv${i} v128)`);
  for (const j of C) lines.push(`  (local $w${j} i32) (local $wv${j} v128)`);
  lines.push('  (local $p i32) (local $endU i32) (local $end4 i32) (local $end i32)');
  // row base pointers
  for (const i of R) lines.push(`  (local.set $x${i} (i32.add (local.get $x) (i32.mul (i32.const ${i * 4}) (local.get $ldx))))`);
  for (const j of C) lines.push(`  (local.set $w${j} (i32.add (local.get $w) (i32.mul (i32.const ${j * 4}) (local.get $ldw))))`);
  lines.push(`  (local.set $endU (i32.shl (i32.and (local.get $k) (i32.const ${-4 * UNROLL})) (i32.const 2)))`);
  lines.push('  (local.set $end4 (i32.shl (i32.and (local.get $k) (i32.const -4)) (i32.const 2)))');
  lines.push('  (local.set $end (i32.shl (local.get $k) (i32.const 2)))');
  // SIMD main loop over k, UNROLL steps of 4 floats per iteration (loads at constant offsets from one address each)
  lines.push('  (block $udone (loop $unrolled');
  lines.push('    (br_if $udone (i32.ge_u (local.get $p) (local.get $endU)))');
  for (let u = 0; u < UNROLL; u++) {
    for (const i of R) lines.push(`    (local.set $xv${i} (v128.load offset=${16 * u} (i32.add (local.get $x${i}) (local.get $p))))`);
    for (const j of C) lines.push(`    (local.set $wv${j} (v128.load offset=${16 * u} (i32.add (local.get $w${j}) (local.get $p))))`);
    for (const i of R) for (const j of C) lines.push(`    (local.set ${acc(i, j)} (f32x4.add (local.get ${acc(i, j)}) (f32x4.mul (local.get $xv${i}) (local.get $wv${j}))))`);
  }
  lines.push(`    (local.set $p (i32.add (local.get $p) (i32.const ${16 * UNROLL})))`);
  lines.push('    (br $unrolled)))');
  // the k mod 4·UNROLL rest, 4 floats per step (the same sums in the same order)
  lines.push('  (block $done (loop $simd');
  lines.push('    (br_if $done (i32.ge_u (local.get $p) (local.get $end4)))');
  for (const i of R) lines.push(`    (local.set $xv${i} (v128.load (i32.add (local.get $x${i}) (local.get $p))))`);
  for (const j of C) lines.push(`    (local.set $wv${j} (v128.load (i32.add (local.get $w${j}) (local.get $p))))`);
  for (const i of R) for (const j of C) lines.push(`    (local.set ${acc(i, j)} (f32x4.add (local.get ${acc(i, j)}) (f32x4.mul (local.get $xv${i}) (local.get $wv${j}))))`);
  lines.push('    (local.set $p (i32.add (local.get $p) (i32.const 16)))');
  lines.push('    (br $simd)))');
  // scalar tail (k mod 4)
  lines.push('  (block $tdone (loop $tail');
  lines.push('    (br_if $tdone (i32.ge_u (local.get $p) (local.get $end)))');
  for (const i of R) for (const j of C) {
    lines.push(`    (local.set ${tail(i, j)} (f32.add (local.get ${tail(i, j)}) (f32.mul (f32.load (i32.add (local.get $x${i}) (local.get $p))) (f32.load (i32.add (local.get $w${j}) (local.get $p))))))`);
  }
  lines.push('    (local.set $p (i32.add (local.get $p) (i32.const 4)))');
  lines.push('    (br $tail)))');
  // y[i, j] += lane sum + tail
  for (const i of R) for (const j of C) {
    const a = acc(i, j);
    const addr = `(i32.add (local.get $y) (i32.shl (i32.add (i32.mul (i32.const ${i}) (local.get $ldy)) (i32.const ${j})) (i32.const 2)))`;
    lines.push(`  (f32.store ${addr} (f32.add (f32.load ${addr}) (f32.add (f32.add (f32.add (f32x4.extract_lane 0 (local.get ${a})) (f32x4.extract_lane 1 (local.get ${a}))) (f32.add (f32x4.extract_lane 2 (local.get ${a})) (f32x4.extract_lane 3 (local.get ${a})))) (local.get ${tail(i, j)}))))`);
  }
  lines.push(')');
  return lines.join('\n');
}

/** Binary16 bits (an i32 expression) → f32, exact for every pattern (normals and subnormals by a 2¹¹² rescale; ±Inf and NaN kept). */
function f16ToF32(h: string): string {
  const em = `(i32.and ${h} (i32.const 0x7fff))`;
  return `(f32.copysign
      (select
        (f32.reinterpret_i32 (i32.or (i32.shl ${em} (i32.const 13)) (i32.const 0x7f800000)))
        (f32.mul (f32.reinterpret_i32 (i32.shl ${em} (i32.const 13))) (f32.const 0x1p112))
        (i32.ge_u ${em} (i32.const 0x7c00)))
      (f32.reinterpret_i32 (i32.shl ${h} (i32.const 16))))`;
}

/** Quants per block and bytes of one block's quants. */
const QK = 32;
const QBYTES = { q8: 32, q4: 16 } as const;
type QFormat = keyof typeof QBYTES;

/**
 * One micro-kernel on a block-quantised w: an MR × NR block of dot products over k = 32·bpr, one
 * quant block (32 values, one scale) per step. Accumulates exactly as microKernel does on the
 * dequantised rows (lane l of acc holds the terms i ≡ l mod 4, in order of i).
 */
function quantKernel(fmt: QFormat, MR: number, NR: number): string {
  const R = [...Array(MR).keys()], C = [...Array(NR).keys()];
  const acc = (i: number, j: number) => `$a${i}_${j}`;
  const QB = QBYTES[fmt];
  const lines: string[] = [];
  lines.push(`(func $${fmt}k${MR}x${NR} (param $x i32) (param $ldx i32) (param $q i32) (param $s i32) (param $bpr i32) (param $y i32) (param $ldy i32)`);
  for (const i of R) for (const j of C) lines.push(`  (local ${acc(i, j)} v128)`);
  for (const i of R) lines.push(`  (local $x${i} i32)`);
  for (const j of C) lines.push(`  (local $q${j} i32) (local $s${j} i32) (local $d${j} v128) (local $lo${j} v128) (local $hi${j} v128) (local $h${j} v128) (local $w${j} v128)`);
  lines.push('  (local $xv v128) (local $b i32) (local $p i32)');
  for (const i of R) lines.push(`  (local.set $x${i} (i32.add (local.get $x) (i32.mul (i32.const ${i * 4}) (local.get $ldx))))`);
  for (const j of C) {
    lines.push(`  (local.set $q${j} (i32.add (local.get $q) (i32.mul (i32.const ${j * QB}) (local.get $bpr))))`);
    lines.push(`  (local.set $s${j} (i32.add (local.get $s) (i32.mul (i32.const ${j * 2}) (local.get $bpr))))`);
  }
  lines.push('  (block $done (loop $blocks');
  lines.push('    (br_if $done (i32.ge_u (local.get $b) (local.get $bpr)))');
  for (const j of C) {
    lines.push(`    (local.set $d${j} (f32x4.splat ${f16ToF32(`(i32.load16_u (local.get $s${j}))`)}))`);
    if (fmt === 'q4') {
      // byte t holds q_t (low nibble) and q_{t+16} (high nibble), each stored + 8
      lines.push(`    (local.set $h${j} (v128.load (local.get $q${j})))`);
      lines.push(`    (local.set $lo${j} (i8x16.sub (v128.and (local.get $h${j}) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8)))`);
      lines.push(`    (local.set $hi${j} (i8x16.sub (i8x16.shr_u (local.get $h${j}) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8)))`);
    } else {
      lines.push(`    (local.set $lo${j} (v128.load (local.get $q${j})))`);
      lines.push(`    (local.set $hi${j} (v128.load offset=16 (local.get $q${j})))`);
    }
  }
  // 32 values = two halves of 16 int8 (lo, hi), each four f32x4 of consecutive values
  for (const half of ['lo', 'hi']) {
    for (const part of ['low', 'high']) {
      for (const j of C) lines.push(`    (local.set $h${j} (i16x8.extend_${part}_i8x16_s (local.get $${half}${j})))`);
      for (const quarter of ['low', 'high']) {
        const c = (half === 'lo' ? 0 : 4) + (part === 'low' ? 0 : 2) + (quarter === 'low' ? 0 : 1);
        for (const j of C) lines.push(`    (local.set $w${j} (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_${quarter}_i16x8_s (local.get $h${j}))) (local.get $d${j})))`);
        for (const i of R) {
          lines.push(`    (local.set $xv (v128.load offset=${c * 16} (i32.add (local.get $x${i}) (local.get $p))))`);
          for (const j of C) lines.push(`    (local.set ${acc(i, j)} (f32x4.add (local.get ${acc(i, j)}) (f32x4.mul (local.get $xv) (local.get $w${j}))))`);
        }
      }
    }
  }
  for (const j of C) {
    lines.push(`    (local.set $q${j} (i32.add (local.get $q${j}) (i32.const ${QB})))`);
    lines.push(`    (local.set $s${j} (i32.add (local.get $s${j}) (i32.const 2)))`);
  }
  lines.push(`    (local.set $p (i32.add (local.get $p) (i32.const ${QK * 4})))`);
  lines.push('    (local.set $b (i32.add (local.get $b) (i32.const 1)))');
  lines.push('    (br $blocks)))');
  // y[i, j] += lane sum + 0 (the f32 kernel's empty k mod 4 tail: same rounding, same signed zeros)
  for (const i of R) for (const j of C) {
    const a = acc(i, j);
    const addr = `(i32.add (local.get $y) (i32.shl (i32.add (i32.mul (i32.const ${i}) (local.get $ldy)) (i32.const ${j})) (i32.const 2)))`;
    lines.push(`  (f32.store ${addr} (f32.add (f32.load ${addr}) (f32.add (f32.add (f32.add (f32x4.extract_lane 0 (local.get ${a})) (f32x4.extract_lane 1 (local.get ${a}))) (f32.add (f32x4.extract_lane 2 (local.get ${a})) (f32x4.extract_lane 3 (local.get ${a})))) (f32.const 0))))`);
  }
  lines.push(')');
  return lines.join('\n');
}

/**
 * q8deq / q4deq(q, s, blocks, dst): dequantises `blocks` consecutive blocks (whole rows of a matrix
 * whose rows are whole blocks: quants at q, binary16 scales at s) into f32 at dst, 32 per block:
 * x̂ = d·q (Q8_0) or d·(q − 8) (Q4_0), exact in f32 (the same values as backend/quant.ts dequantiseRows).
 */
function dequantFunc(fmt: QFormat): string {
  const QB = QBYTES[fmt];
  const lines: string[] = [];
  lines.push(`(func (export "${fmt}deq") (param $q i32) (param $s i32) (param $blocks i32) (param $dst i32)`);
  lines.push('  (local $b i32) (local $d v128) (local $lo v128) (local $hi v128) (local $h v128)');
  lines.push('  (block $done (loop $each');
  lines.push('    (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))');
  lines.push(`    (local.set $d (f32x4.splat ${f16ToF32('(i32.load16_u (local.get $s))')}))`);
  if (fmt === 'q4') {
    lines.push('    (local.set $h (v128.load (local.get $q)))');
    lines.push('    (local.set $lo (i8x16.sub (v128.and (local.get $h) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8)))');
    lines.push('    (local.set $hi (i8x16.sub (i8x16.shr_u (local.get $h) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8)))');
  } else {
    lines.push('    (local.set $lo (v128.load (local.get $q)))');
    lines.push('    (local.set $hi (v128.load offset=16 (local.get $q)))');
  }
  for (const half of ['lo', 'hi']) for (const part of ['low', 'high']) {
    lines.push(`    (local.set $h (i16x8.extend_${part}_i8x16_s (local.get $${half})))`);
    for (const quarter of ['low', 'high']) {
      const c = (half === 'lo' ? 0 : 4) + (part === 'low' ? 0 : 2) + (quarter === 'low' ? 0 : 1);
      lines.push(`    (v128.store offset=${c * 16} (local.get $dst) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_${quarter}_i16x8_s (local.get $h))) (local.get $d)))`);
    }
  }
  lines.push(`    (local.set $q (i32.add (local.get $q) (i32.const ${QB})))`);
  lines.push('    (local.set $s (i32.add (local.get $s) (i32.const 2)))');
  lines.push(`    (local.set $dst (i32.add (local.get $dst) (i32.const ${QK * 4})))`);
  lines.push('    (local.set $b (i32.add (local.get $b) (i32.const 1)))');
  lines.push('    (br $each)))');
  lines.push(')');
  return lines.join('\n');
}

/** How a driver calls its micro-kernels: the export's name and parameters, and the call of one block. */
interface KernelSet {
  name: string;
  params: string;
  /** The call of micro-kernel `MRxNR` on the block at x row $r and w row `o` (a local's name). */
  call: (kernel: string, o: string) => string;
  /** Reads the pair of w rows at local $o once, one load per 64-byte line in address order (TOUCH), where the set has one. */
  touch?: string;
}

/** x row $r's address, and y[$r, o]'s. */
const X_ROW = '(i32.add (local.get $x) (i32.shl (i32.mul (local.get $r) (local.get $ldx)) (i32.const 2))) (local.get $ldx)';
const Y_AT = (o: string) => `(i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $ldy)) (local.get $${o})) (i32.const 2))) (local.get $ldy)`;
/** w row o's byte address (f32). */
const W_ROW = (o: string) => `(i32.add (local.get $w) (i32.shl (i32.mul (local.get $${o}) (local.get $ldw)) (i32.const 2)))`;

const F32_SET: KernelSet = {
  name: 'gemm',
  params: '(param $x i32) (param $ldx i32) (param $w i32) (param $ldw i32) (param $y i32) (param $ldy i32) (param $n i32) (param $k i32) (param $m i32)',
  call: (kernel, o) => `(call $k${kernel}
        ${X_ROW}
        ${W_ROW(o)} (local.get $ldw)
        ${Y_AT(o)}
        (local.get $k))`,
  touch: `(local.set $t ${W_ROW('o')})
    (local.set $tend (i32.add (local.get $t) (i32.shl (local.get $ldw) (i32.const 3))))
    (block $td (loop $tl
      (br_if $td (i32.ge_u (local.get $t) (local.get $tend)))
      (drop (i32.load (local.get $t)))
      (local.set $t (i32.add (local.get $t) (i32.const 64)))
      (br $tl)))`,
};

const quantSet = (fmt: QFormat): KernelSet => ({
  name: `${fmt}gemm`,
  params: '(param $x i32) (param $ldx i32) (param $q i32) (param $s i32) (param $bpr i32) (param $y i32) (param $ldy i32) (param $n i32) (param $m i32)',
  call: (kernel, o) => `(call $${fmt}k${kernel}
        ${X_ROW}
        (i32.add (local.get $q) (i32.mul (local.get $${o}) (i32.mul (local.get $bpr) (i32.const ${QBYTES[fmt]}))))
        (i32.add (local.get $s) (i32.mul (local.get $${o}) (i32.shl (local.get $bpr) (i32.const 1))))
        (local.get $bpr)
        ${Y_AT(o)})`,
});

/** The call of an MR×NR block (MR = 1…3) for the n mod 4 rows at $r, chosen by local $rem. */
const remCall = (call: KernelSet['call'], NR: number, o: string) =>
  `(if (i32.eq (local.get $rem) (i32.const 3)) (then ${call(`3x${NR}`, o)})
        (else (if (i32.eq (local.get $rem) (i32.const 2)) (then ${call(`2x${NR}`, o)})
          (else (if (i32.eq (local.get $rem) (i32.const 1)) (then ${call(`1x${NR}`, o)}))))))`;

/**
 * A driver. n < 4 (decode's GEMV): 1×1 blocks, one w row at a time, so w streams through memory in
 * one sequential pass (several rows read side by side run at half the bandwidth or less). n ≥ 4: w
 * rows in pairs (outer), each pair multiplied by every block of 4 x rows and then by the n mod 4
 * rows left (a 3×2, 2×2 or 1×2 block) while it is in L1; an odd last w row the same with ×1 blocks.
 *
 * TOUCH: a pair's first 4×2 block would read its two rows side by side from memory, which streams
 * at about half the bandwidth of one sequential pass (as in the GEMV above), while the later blocks
 * find them in L1. So the f32 driver first reads the pair once in address order (one load per line,
 * the values dropped): at 16 rows ~1.15–1.3× on the 135M shapes in Chromium 150 on Zen 5, ~1.05× in
 * Node 20; no change at 64 rows. (Touching the next pair's lines inside the first block measured no
 * faster.)
 */
function driver({ name, params, call, touch }: KernelSet): string {
  return `
(func $${name} (export "${name}") ${params}
  (local $r i32) (local $o i32) (local $n4 i32) (local $m2 i32) (local $rem i32) (local $t i32) (local $tend i32)
  (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
  (local.set $rem (i32.sub (local.get $n) (local.get $n4)))
  (local.set $m2 (i32.and (local.get $m) (i32.const -2)))
  (if (i32.eqz (local.get $n4))
    (then
      (local.set $r (i32.const 0))
      (block $rd3 (loop $rl3
        (br_if $rd3 (i32.ge_u (local.get $r) (local.get $n)))
        (local.set $o (i32.const 0))
        (block $od4 (loop $ol4
          (br_if $od4 (i32.ge_u (local.get $o) (local.get $m)))
          ${call('1x1', 'o')}
          (local.set $o (i32.add (local.get $o) (i32.const 1)))
          (br $ol4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rl3)))
      (return)))
  (local.set $o (i32.const 0))
  (block $od (loop $ol
    (br_if $od (i32.ge_u (local.get $o) (local.get $m2)))
    ${touch ?? ''}
    (local.set $r (i32.const 0))
    (block $rd (loop $rl
      (br_if $rd (i32.ge_u (local.get $r) (local.get $n4)))
      ${call('4x2', 'o')}
      (local.set $r (i32.add (local.get $r) (i32.const 4)))
      (br $rl)))
    ${remCall(call, 2, 'o')}
    (local.set $o (i32.add (local.get $o) (i32.const 2)))
    (br $ol)))
  (if (i32.lt_u (local.get $m2) (local.get $m))
    (then
      (local.set $r (i32.const 0))
      (block $rd2 (loop $rl2
        (br_if $rd2 (i32.ge_u (local.get $r) (local.get $n4)))
        ${call('4x1', 'm2')}
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (br $rl2)))
      ${remCall(call, 1, 'm2')}))
)`;
}

/** Block shapes of every kernel set (MR × NR): 4-row blocks, the 1–3 rows left over, and 1×1 for the GEMV. */
const SHAPES: [number, number][] = [[4, 2], [4, 1], [3, 2], [2, 2], [1, 2], [3, 1], [2, 1], [1, 1]];

/**
 * Byte offsets in the control block of the threaded arena (backend/gemm_threads.ts), i32 each: the
 * job's kind (0 f32, 1 Q8_0, 2 Q4_0) and its 9 arguments (f32: x, ldx, w, ldw, y, ldy, n, k, m;
 * quantised: x, ldx, q, s, y, ldy, n, bpr, m), then per thread t its w-row range [o0, o1).
 */
export const CTL = { kind: 8, args: 12, ranges: 64 } as const;

/**
 * part(ctl, t): thread t's share of the job in the control block at byte offset ctl: w rows
 * [o0, o1) of it (y columns o0 .. o1−1), computed by the same driver as the whole product.
 */
const PART = `
(func (export "part") (param $c i32) (param $t i32)
  (local $o0 i32) (local $m i32) (local $kind i32)
  (local.set $o0 (i32.load (i32.add (local.get $c) (i32.add (i32.const ${CTL.ranges}) (i32.shl (local.get $t) (i32.const 3))))))
  (local.set $m (i32.sub (i32.load (i32.add (local.get $c) (i32.add (i32.const ${CTL.ranges + 4}) (i32.shl (local.get $t) (i32.const 3))))) (local.get $o0)))
  (if (i32.le_s (local.get $m) (i32.const 0)) (then (return)))
  (local.set $kind (i32.load offset=${CTL.kind} (local.get $c)))
  (if (i32.eqz (local.get $kind))
    (then (call $gemm
      (i32.load offset=${CTL.args} (local.get $c)) (i32.load offset=${CTL.args + 4} (local.get $c))
      (i32.add (i32.load offset=${CTL.args + 8} (local.get $c)) (i32.shl (i32.mul (local.get $o0) (i32.load offset=${CTL.args + 12} (local.get $c))) (i32.const 2)))
      (i32.load offset=${CTL.args + 12} (local.get $c))
      (i32.add (i32.load offset=${CTL.args + 16} (local.get $c)) (i32.shl (local.get $o0) (i32.const 2)))
      (i32.load offset=${CTL.args + 20} (local.get $c)) (i32.load offset=${CTL.args + 24} (local.get $c))
      (i32.load offset=${CTL.args + 28} (local.get $c)) (local.get $m))
      (return)))
  ${(['q8', 'q4'] as QFormat[]).map((f, i) => `(if (i32.eq (local.get $kind) (i32.const ${i + 1}))
    (then (call $${f}gemm
      (i32.load offset=${CTL.args} (local.get $c)) (i32.load offset=${CTL.args + 4} (local.get $c))
      (i32.add (i32.load offset=${CTL.args + 8} (local.get $c)) (i32.mul (local.get $o0) (i32.mul (i32.load offset=${CTL.args + 28} (local.get $c)) (i32.const ${QBYTES[f]}))))
      (i32.add (i32.load offset=${CTL.args + 12} (local.get $c)) (i32.mul (local.get $o0) (i32.shl (i32.load offset=${CTL.args + 28} (local.get $c)) (i32.const 1))))
      (i32.load offset=${CTL.args + 28} (local.get $c))
      (i32.add (i32.load offset=${CTL.args + 16} (local.get $c)) (i32.shl (local.get $o0) (i32.const 2)))
      (i32.load offset=${CTL.args + 20} (local.get $c)) (i32.load offset=${CTL.args + 24} (local.get $c))
      (local.get $m))))`).join('\n  ')}
)`;

/**
 * The whole module: memory imported from JS (env.memory) so the host can grow it and view it;
 * `shared` declares it shared (threads feature; maximum 4 GiB) for the multi-threaded arena.
 */
export function gemmWat(shared = false): string {
  return [
    '(module',
    shared ? '(import "env" "memory" (memory 1 65536 shared))' : '(import "env" "memory" (memory 1))',
    ...SHAPES.map(([mr, nr]) => microKernel(mr, nr)),
    ...(['q8', 'q4'] as QFormat[]).flatMap((f) => SHAPES.map(([mr, nr]) => quantKernel(f, mr, nr))),
    driver(F32_SET),
    driver(quantSet('q8')),
    driver(quantSet('q4')),
    dequantFunc('q8'),
    dequantFunc('q4'),
    attentionWat(),
    siluWat(),
    PART,
    ')',
  ].join('\n');
}
