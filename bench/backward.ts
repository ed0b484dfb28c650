/**
 * Backward-pass benchmark (issue 24; not a timed test): on the SmolLM-135M-shaped random model
 * (bench/smollm_random.ts), one backward (model/backward.ts: recording forward + host float64
 * reverse pass, keeping resid_pre) against one forward (Engine.run, last-row logits), and — with
 * ATP=1 — the AtP grid of resid_pre (studies/atp.ts: two forwards, one backward) against the exact
 * grid with prefix reuse (studies/patching.ts), at T = 64 and 256 (TOKENS=64,256), load average
 * beside each figure. Goals from the issue: backward ≤ 2.5× a forward; AtP ≥ 50× faster than exact at T = 256.
 *   npx tsx bench/backward.ts            TOKENS=64 ATP=1 npx tsx bench/backward.ts
 */
import * as os from 'node:os';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { backward } from '../workers/engine/model/backward';
import { attributionPatching } from '../workers/engine/studies/atp';
import { patchingGrid } from '../workers/engine/studies/patching';
import { smolLM135MRandom } from './smollm_random';

const engine = await Engine.load(new NodeFiles(smolLM135MRandom()), new CpuBackend());
const load1 = () => Number(os.loadavg()[0].toFixed(2));
const sizes = (process.env.TOKENS ?? '64,256').split(',').map(Number);
const time = async (f: () => Promise<unknown>): Promise<number> => { const t0 = performance.now(); await f(); return performance.now() - t0; };
const rows: Record<string, unknown>[] = [];
// the first backward copies the weights to the host (once per model): timed apart
const warm = await time(() => backward(engine.model, [1, 2, 3, 4], { kind: 'margin', good: [10], bad: [11] }, { keep: () => false }));
rows.push({ T: 4, first_backward_ms: Math.round(warm), note: 'includes the host weight copy', load1: [load1()] });
for (const T of sizes) {
  const ids = Array.from({ length: T }, (_, i) => 1 + ((i * 37) % 500));
  const obj = { kind: 'margin' as const, good: [10], bad: [11] };
  await engine.run(ids, { logits: 'last' }); // warm-up
  const l1 = load1();
  // interleaved, best of three each: the load on a shared machine moves between calls
  const fs: number[] = [], bs: number[] = [];
  for (let r = 0; r < 3; r++) {
    fs.push(await time(() => engine.run(ids, { logits: 'last' })));
    bs.push(await time(() => backward(engine.model, ids, obj, { keep: (h) => h.endsWith('hook_resid_pre') })));
  }
  const fwd = Math.min(...fs), bwd = Math.min(...bs);
  rows.push({ T, forward_ms: Math.round(fwd), backward_ms: Math.round(bwd), ratio: Number((bwd / fwd).toFixed(1)), goal: '≤ 2.5', load1: [l1, load1()] });
  if (process.env.ATP) {
    // prompts as text: ids < 512 decode through stories260K's tokenizer; equal-length pair differing at position 1
    const words = Array.from({ length: T - 1 }, (_, i) => ['the', 'cat', 'sat', 'on', 'a', 'mat'][i % 6]).join(' ');
    const clean = `Lily ${words}`, corrupt = `Tom ${words}`;
    const req = { clean, corrupt, good: { text: ' happy' }, bad: { text: ' sad' }, hook: 'resid_pre' as const };
    const atp = await time(() => attributionPatching(engine, req));
    const la = load1();
    const exact = await time(() => patchingGrid(engine, req));
    rows.push({ T: engine.encodePrompt({ prompt: clean }).length, atp_ms: Math.round(atp), exact_ms: Math.round(exact), speedup: Number((exact / atp).toFixed(1)), goal: '≥ 50 at T = 256', load1: [la, load1()] });
  }
}
console.table(rows);
engine.dispose();
