/**
 * What prefix KV reuse saves the branch explorer, stories260K on the CPU backend in Node
 * (`npx tsx bench/branching.ts`): a fork near the end of a long path computes only its own positions
 * when the shared prefix is in the KV cache; the same fork after another run overwrote the cache
 * recomputes the prefix first. Both conditions interleaved over rounds; ratio of the means, with the
 * load average printed beside each figure. A benchmark, not a test: it prints and asserts nothing.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { BranchExplorer } from '../workers/engine/studies/branching/explorer';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.BRANCHPOINT_SHARED ?? path.join(root, '..', 'shared');
const model = path.join(shared, 'models', 'stories260K');
if (!fs.existsSync(model)) throw new Error(`stories260K not found at ${model}: set BRANCHPOINT_SHARED to the shared/ folder`);

const engine = await Engine.load(new NodeFiles(model), new CpuBackend());
const PROMPT = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park. '.repeat(8);
const N = 64, K = N - 8, ROUNDS = 5;
const greedy = { temperature: 0, topK: 0, seed: 0, steered: false };
const x = await BranchExplorer.start(engine, { prompt: PROMPT, good: { text: ' Lily' }, bad: { text: ' Tom' }, maxNewTokens: N, stopAtEos: false }, greedy);
const T = x.tree.promptIds.length;
const alt = x.tree.nodes[0].top[K].ids[1];
const load = () => os.loadavg()[0].toFixed(2);

const times = { reused: [] as number[], recomputed: [] as number[] };
const positions = { reused: 0, recomputed: 0 };
for (let r = 0; r < ROUNDS; r++) {
  for (const cond of ['reused', 'recomputed'] as const) {
    if (cond === 'recomputed') await engine.run([1, 2, 3]); // another run overwrites the cache
    else await x.lensMargins(0, T + K, [alt]); // puts the trunk's prefix back in the cache (not timed)
    const t0 = performance.now();
    const node = await x.fork(0, T + K, alt, greedy);
    times[cond].push(performance.now() - t0);
    positions[cond] = node.forwarded;
  }
}
const mean = (xs: number[]) => xs.reduce((s, v) => s + v, 0) / xs.length;
console.log(`stories260K, CPU backend: prompt ${T} tokens, ${N} new, fork at new token ${K} (${N - K - 1} positions after it), ${ROUNDS} rounds`);
console.log(`fork with the prefix in the KV cache: ${mean(times.reused).toFixed(1)} ms, ${positions.reused} positions computed (load ${load()})`);
console.log(`fork recomputing the prefix:          ${mean(times.recomputed).toFixed(1)} ms, ${positions.recomputed} positions computed (load ${load()})`);
console.log(`ratio recomputed / reused: ${(mean(times.recomputed) / mean(times.reused)).toFixed(2)}× (load ${load()})`);
engine.dispose();
