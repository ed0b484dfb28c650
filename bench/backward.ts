/**
 * Backward-pass benchmark (issue 24; not a timed test), CPU backend in Node (1 GEMM thread; THREADS=2
 * for two), SmolLM-135M-shaped random model (bench/smollm_random.ts), T = 64 and 256 (TOKENS=64,256),
 * the 1-minute load average beside each figure:
 * - one backward (model/backward.ts: the recording forward + the reverse pass through the backend's
 *   backward ops, keeping resid_pre) against one forward (Engine.run, last-row logits); goal ≤ 2.5×;
 * - with ATP=1, the AtP grid of resid_pre (studies/atp.ts: two forwards, one backward) against the
 *   exact grid with prefix reuse (studies/patching.ts); goal ≥ 50× faster at T = 256. The exact grid
 *   at 30 layers × T cells takes hours here, so it is extrapolated: the positions the grid computes
 *   (layer 0: the cell at 1; layers ≥ 1: cells 1..T−1, T − p positions each; L whole-layer patches
 *   from position 1) times a forward's cost per position (its matmuls are the same per position; a
 *   patched run's attention reads more keys than the average, so this is low). Checked against one
 *   measured cell: the last layer's at position 1 less the one at T−1 (each `only` run also makes
 *   the source and reference runs), per computed position, as a multiple of the forward's;
 * - with FLOW=1, the forward-only flow / IFR span map (studies/flow.ts, two spans, no faithfulness
 *   curves) against one forward; goal ≤ 3×.
 *   npx tsx bench/backward.ts            TOKENS=64 ATP=1 FLOW=1 npx tsx bench/backward.ts
 */
import * as os from 'node:os';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { backward } from '../workers/engine/model/backward';
import { attributionPatching } from '../workers/engine/studies/atp';
import { flowAttribution } from '../workers/engine/studies/flow';
import { patchingGrid } from '../workers/engine/studies/patching';
import { smolLM135MRandom } from './smollm_random';

const threads = Number(process.env.THREADS ?? 1);
const engine = await Engine.load(new NodeFiles(smolLM135MRandom()), new CpuBackend(undefined, { threads }));
const load1 = () => Number(os.loadavg()[0].toFixed(2));
const sizes = (process.env.TOKENS ?? '64,256').split(',').map(Number);
const time = async (f: () => Promise<unknown>): Promise<number> => { const t0 = performance.now(); await f(); return performance.now() - t0; };
const rows: Record<string, unknown>[] = [];
/** Records a row and prints it at once (a long run's figures survive an interruption). */
const row = (r: Record<string, unknown>) => { rows.push(r); console.log(JSON.stringify(r)); };
const obj = { kind: 'margin' as const, good: [10], bad: [11] };
const resid = { keep: (h: string) => h.endsWith('hook_resid_pre') };
// the first backward of > 8 rows makes the CPU's transposed weight copies (once per model): timed apart
const warm = await time(() => backward(engine.model, Array.from({ length: 16 }, (_, i) => 1 + i), obj, resid));
row({ T: 16, first_backward_ms: Math.round(warm), note: 'includes the transposed weight copies', load1: [load1()] });
for (const T of sizes) {
  const ids = Array.from({ length: T }, (_, i) => 1 + ((i * 37) % 500));
  await engine.run(ids, { logits: 'last' }); // warm-up
  const l1 = load1();
  // interleaved, best of three each: the load on a shared machine moves between calls
  const fs: number[] = [], bs: number[] = [];
  for (let r = 0; r < 3; r++) {
    fs.push(await time(() => engine.run(ids, { logits: 'last' })));
    bs.push(await time(() => backward(engine.model, ids, obj, resid)));
  }
  const fwd = Math.min(...fs), bwd = Math.min(...bs);
  row({ T, forward_ms: Math.round(fwd), backward_ms: Math.round(bwd), ratio: Number((bwd / fwd).toFixed(2)), goal: '≤ 2.5', load1: [l1, load1()] });
  // prompts as text (stories260K's tokenizer): an equal-length pair differing in the name, words added until ≥ T tokens
  let words = '', clean = 'Tom', corrupt = 'Ben';
  for (let i = 0; engine.encodePrompt({ prompt: clean }).length < T; i++) {
    words += ` ${['the', 'dog', 'ran', 'to', 'the', 'park'][i % 6]}`;
    clean = `Tom${words}`; corrupt = `Ben${words}`;
  }
  const n = engine.encodePrompt({ prompt: clean }).length;
  if (engine.encodePrompt({ prompt: corrupt }).length !== n) throw new Error('bench: the pair differs in token length');
  if (process.env.ATP) {
    const req = { clean, corrupt, good: { text: ' happy' }, bad: { text: ' sad' }, hook: 'resid_pre' as const };
    const la = load1();
    const atp = await time(() => attributionPatching(engine, req));
    // the grid's positions: layer 0 differs at position 1 only (its resid_pre is the embedding), layers ≥ 1 at 1..n−1
    // (position 0, BOS, is equal and skipped); cell (l, p) computes n − p positions; plus the L whole-layer patches from position 1
    const L = engine.spec.nLayers;
    const positions = (n - 1) + (L - 1) * (n * (n - 1)) / 2 + L * (n - 1);
    const exact = positions * (fwd / n);
    // a check of the per-position cost: one measured cell of the last layer at position 1 (n − 1 positions), less the cell at n − 1 (one)
    const cell = async (col: number) => time(() => patchingGrid(engine, { ...req, only: { layer: L - 1, col } }));
    const c1 = (await cell(1)) - (await cell(n - 1));
    row({ T: n, atp_ms: Math.round(atp), grid_positions: positions, exact_ms_extrapolated: Math.round(exact), cell_1_per_position_vs_forward: Number(((c1 / (n - 1)) / (fwd / n)).toFixed(2)), speedup: Math.round(exact / atp), goal: '≥ 50 at T = 256', load1: [la, load1()] });
  }
  if (process.env.FLOW) {
    const spans = [{ label: 'subject', start: 1, end: 2 }, { label: 'rest', start: 2, end: n }];
    const req = { prompt: clean, good: { text: ' happy' }, bad: { text: ' sad' }, spans, faithfulness: false };
    await flowAttribution(engine, req); // warm-up (host weights read once per model)
    const lf = load1();
    const ff: number[] = [], fl: number[] = [];
    for (let r = 0; r < 3; r++) {
      ff.push(await time(() => engine.run(engine.encodePrompt({ prompt: clean }), { logits: 'last' })));
      fl.push(await time(() => flowAttribution(engine, req)));
    }
    const f = Math.min(...ff), g = Math.min(...fl);
    row({ T: n, forward_ms: Math.round(f), flow_ms: Math.round(g), ratio: Number((g / f).toFixed(2)), goal: '≤ 3', load1: [lf, load1()] });
  }
}
console.table(rows);
engine.dispose();
