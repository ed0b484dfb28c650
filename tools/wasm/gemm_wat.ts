/**
 * WebAssembly text of the CPU backend's matrix kernels (WASM SIMD128), written out by small
 * generators so each register-blocked micro-kernel is spelled once. tools/build_wasm.ts assembles it
 * with wabt into workers/engine/ops/gemm.wasm.ts.
 *
 * Exports (all pointers are byte offsets into the imported memory, strides in f32 elements):
 *   gemm(x, ldx, w, ldw, y, ldy, n, k, m):  y[r, o] += Σ_i x[r, i]·w[o, i]   (r < n, o < m, i < k)
 * i.e. y += x·wᵀ with x [n, k] and w [m, k] in nn.Linear layout. The caller initialises y (zeros or
 * the bias). Row blocks of 4 x rows × 2 w rows keep 8 f32x4 accumulators (plus 6 loaded vectors)
 * within the 16 SIMD registers of x86-64 and AArch64's 32; single x rows (decode's GEMV and the
 * rows left over) use 1 × 4 blocks. k is walked 4 floats at a time, the k mod 4 tail in scalar f32.
 */

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
  lines.push('  (local $p i32) (local $end4 i32) (local $end i32)');
  // row base pointers
  for (const i of R) lines.push(`  (local.set $x${i} (i32.add (local.get $x) (i32.mul (i32.const ${i * 4}) (local.get $ldx))))`);
  for (const j of C) lines.push(`  (local.set $w${j} (i32.add (local.get $w) (i32.mul (i32.const ${j * 4}) (local.get $ldw))))`);
  lines.push('  (local.set $end4 (i32.shl (i32.and (local.get $k) (i32.const -4)) (i32.const 2)))');
  lines.push('  (local.set $end (i32.shl (local.get $k) (i32.const 2)))');
  // SIMD main loop over k, 4 floats per step
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

/** A call of micro-kernel `kernel` on the block at x row $r and w row `$o` (a local's name). */
function callBlock(kernel: string, o: string): string {
  return `(call $${kernel}
        (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r) (local.get $ldx)) (i32.const 2))) (local.get $ldx)
        (i32.add (local.get $w) (i32.shl (i32.mul (local.get $${o}) (local.get $ldw)) (i32.const 2))) (local.get $ldw)
        (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $ldy)) (local.get $${o})) (i32.const 2))) (local.get $ldy)
        (local.get $k))`;
}

/** The driver: 4×2 blocks over rows divisible by 4, then 4×1 for an odd last w row; 1×4 and 1×1 for the remaining x rows. */
const DRIVER = `
(func (export "gemm") (param $x i32) (param $ldx i32) (param $w i32) (param $ldw i32) (param $y i32) (param $ldy i32) (param $n i32) (param $k i32) (param $m i32)
  (local $r i32) (local $o i32) (local $n4 i32) (local $m2 i32) (local $m4 i32)
  (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
  (local.set $m2 (i32.and (local.get $m) (i32.const -2)))
  (local.set $m4 (i32.and (local.get $m) (i32.const -4)))
  ;; blocks of 4 x rows: w rows in pairs (outer), so a pair of w rows stays in L1 while every x row block passes
  (local.set $o (i32.const 0))
  (block $od (loop $ol
    (br_if $od (i32.ge_u (local.get $o) (local.get $m2)))
    (local.set $r (i32.const 0))
    (block $rd (loop $rl
      (br_if $rd (i32.ge_u (local.get $r) (local.get $n4)))
      ${callBlock('k4x2', 'o')}
      (local.set $r (i32.add (local.get $r) (i32.const 4)))
      (br $rl)))
    (local.set $o (i32.add (local.get $o) (i32.const 2)))
    (br $ol)))
  (if (i32.lt_u (local.get $m2) (local.get $m))
    (then
      (local.set $r (i32.const 0))
      (block $rd2 (loop $rl2
        (br_if $rd2 (i32.ge_u (local.get $r) (local.get $n4)))
        ${callBlock('k4x1', 'm2')}
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (br $rl2)))))
  ;; the remaining x rows (all of them for a GEMV): 1 × 4 blocks, then 1 × 1
  (local.set $r (local.get $n4))
  (block $rd3 (loop $rl3
    (br_if $rd3 (i32.ge_u (local.get $r) (local.get $n)))
    (local.set $o (i32.const 0))
    (block $od3 (loop $ol3
      (br_if $od3 (i32.ge_u (local.get $o) (local.get $m4)))
      ${callBlock('k1x4', 'o')}
      (local.set $o (i32.add (local.get $o) (i32.const 4)))
      (br $ol3)))
    (block $od4 (loop $ol4
      (br_if $od4 (i32.ge_u (local.get $o) (local.get $m)))
      ${callBlock('k1x1', 'o')}
      (local.set $o (i32.add (local.get $o) (i32.const 1)))
      (br $ol4)))
    (local.set $r (i32.add (local.get $r) (i32.const 1)))
    (br $rl3)))
)`;

/** The whole module: memory imported from JS (env.memory) so the host can grow it and view it. */
export function gemmWat(): string {
  return [
    '(module',
    '(import "env" "memory" (memory 1))',
    microKernel(4, 2),
    microKernel(4, 1),
    microKernel(1, 4),
    microKernel(1, 1),
    DRIVER,
    ')',
  ].join('\n');
}
