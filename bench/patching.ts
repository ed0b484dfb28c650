/**
 * Activation-patching cost on stories260K, CPU backend in Node (`npx tsx bench/patching.ts`): the
 * whole grid (every layer × position, or layer × head for z, plus one whole-layer patch per layer)
 * with prefix KV reuse (studies/patching.ts) against the naive loop of one full forward per cell,
 * for two prompt pairs: the Lily/Tom name swap (21 tokens, the prompts differ from position 1) and
 * a longer story whose corruption is one word near the end. Conditions are interleaved; each
 * figure is printed with the 1-minute load average when it was measured. Asserts nothing.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { patchingGrid, type PatchHook, type PatchingRequest } from '../workers/engine/studies/patching';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.BRANCHPOINT_SHARED ?? path.join(root, '..', 'shared');
const model = path.join(shared, 'models', 'stories260K');
if (!fs.existsSync(model)) throw new Error(`stories260K not found at ${model}: set BRANCHPOINT_SHARED to the shared/ folder`);
const engine = await Engine.load(new NodeFiles(model), new CpuBackend());

const pairs: Record<string, Omit<PatchingRequest, 'hook'>> = {
  lily_tom: {
    clean: 'Lily and Tom went to the park. Lily gave the ball to', corrupt: 'Tom and Lily went to the park. Lily gave the ball to',
    good: { text: ' Tom' }, bad: { text: ' Lily' },
  },
  late_word: {
    clean: 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big dog and she felt very',
    corrupt: 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big cat and she felt very',
    good: { text: ' happy' }, bad: { text: ' sad' },
  },
};
const hooks: PatchHook[] = ['resid_pre', 'attn_out', 'mlp_out', 'z'];
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const load1 = () => Number(os.loadavg()[0].toFixed(2));

await patchingGrid(engine, { ...pairs.lily_tom, hook: 'resid_pre' }); // warm-up (JIT)
const rows: Record<string, unknown>[] = [];
for (const [name, pair] of Object.entries(pairs)) {
  const nTokens = engine.encodePrompt({ prompt: pair.clean }).length;
  for (const hook of hooks) {
    const ms: Record<'reuse' | 'naive', number[]> = { reuse: [], naive: [] };
    const loads: number[] = [];
    let positions = { reuse: 0, naive: 0 }, skipped = 0;
    for (let r = 0; r < ROUNDS; r++) {
      for (const mode of ['reuse', 'naive'] as const) {
        const t0 = performance.now();
        const g = await patchingGrid(engine, { ...pair, hook, reuse: mode === 'reuse' });
        ms[mode].push(performance.now() - t0);
        loads.push(load1());
        positions[mode] = g.positionsComputed;
        if (mode === 'reuse') skipped = g.cellsSkipped;
      }
    }
    const min = (xs: number[]) => Math.min(...xs);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    rows.push({
      pair: name, n_tokens: nTokens, hook,
      reuse_ms: { median: Math.round(median(ms.reuse)), min: Math.round(min(ms.reuse)) },
      naive_ms: { median: Math.round(median(ms.naive)), min: Math.round(min(ms.naive)) },
      speedup: { median: Number((median(ms.naive) / median(ms.reuse)).toFixed(2)), min: Number((min(ms.naive) / min(ms.reuse)).toFixed(2)) },
      positions_computed: positions, position_ratio: Number((positions.naive / Math.max(1, positions.reuse)).toFixed(2)),
      cells_skipped: skipped, load_avg_1m: loads,
    });
    console.error(`${name} ${hook}: ${JSON.stringify(rows[rows.length - 1])}`);
  }
}
console.log(JSON.stringify({ model: 'stories260K', backend: engine.backend.description, node: process.version, cpus: os.cpus().length, rounds: ROUNDS, grids: rows }, null, 2));
engine.dispose();
