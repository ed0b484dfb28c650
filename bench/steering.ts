/**
 * Steering cost on stories260K, CPU backend in Node (`npx tsx bench/steering.ts`): per-token decode
 * time with no intervention, one `add` and one `rotate` at blocks.3.hook_resid_post (ratios from
 * one run, conditions interleaved), and the time of a 10-dose × all-layers dose–response sweep.
 * A benchmark, not a test: it prints numbers and asserts nothing.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import type { Intervention } from '../workers/engine/model/intervention';
import { toIntervention } from '../workers/engine/steering/spec';
import { doseResponse } from '../workers/engine/studies/sweep';
import { caaVector } from '../workers/engine/studies/vectors';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.BRANCHPOINT_SHARED ?? path.join(root, '..', 'shared');
const model = path.join(shared, 'models', 'stories260K');
if (!fs.existsSync(model)) throw new Error(`stories260K not found at ${model}: set BRANCHPOINT_SHARED to the shared/ folder`);
const set = JSON.parse(fs.readFileSync(path.join(root, 'public', 'steering', 'happy_sad.json'), 'utf8')) as { positive: string[]; negative: string[] };

const engine = await Engine.load(new NodeFiles(model), new CpuBackend());
const HOOK = 'blocks.3.hook_resid_post';
const PROMPT = 'Once upon a time, there was a little girl named Lily.';
const N = 200; // new tokens per run
const ROUNDS = 5;
const nPrompt = engine.encodePrompt({ prompt: PROMPT }).length;
const { vector } = await caaVector(engine, { positive: set.positive, negative: set.negative, hook: HOOK });
const run = { nPrompt, maxNewTokens: N };
const conditions: Record<string, Intervention[]> = {
  none: [],
  add: [toIntervention({ hook: HOOK, type: 'add', vector, alpha: 4 }, engine.spec, run)],
  rotate: [toIntervention({ hook: HOOK, type: 'rotate', vector, theta: 0.3 }, engine.spec, run)],
};

/** Mean ms per decode step (tokens 1..N−1; token 0 comes from the prompt pass). */
async function decodeMs(interventions: Intervention[]): Promise<number> {
  const stamps: number[] = [];
  await engine.generate({ prompt: PROMPT, good: { ids: [[0]] }, bad: { ids: [[1]] }, maxNewTokens: N, stopAtEos: false, interventions }, () => stamps.push(performance.now()));
  return (stamps[stamps.length - 1] - stamps[0]) / (stamps.length - 1);
}

await decodeMs([]); // warm-up (JIT)
const samples: Record<string, number[]> = { none: [], add: [], rotate: [] };
for (let r = 0; r < ROUNDS; r++) for (const [name, ivs] of Object.entries(conditions)) samples[name].push(await decodeMs(ivs));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, median(xs)]));
// The minimum over rounds is the least disturbed by other processes on a shared machine.
const best = Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, Math.min(...xs)]));

const doses = [-16, -8, -4, -2, -1, 1, 2, 4, 8, 16];
const t0 = performance.now();
const sweep = await doseResponse(engine, {
  prompt: 'The little girl felt very', good: { text: ' happy' }, bad: { text: ' sad' },
  template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector }, layers: Array.from({ length: engine.spec.nLayers }, (_, l) => l), doses,
});
const sweepMs = performance.now() - t0;

const report = {
  model: 'stories260K', backend: engine.backend.description, node: process.version,
  decode: {
    tokens_per_run: N, rounds: ROUNDS, ms_per_token_median: ms, ms_per_token_min: best,
    ratio_add: { median: ms.add / ms.none, min: best.add / best.none },
    ratio_rotate: { median: ms.rotate / ms.none, min: best.rotate / best.none },
  },
  sweep: { layers: sweep.layers.length, doses: doses.length, forwards: sweep.layers.length * doses.length + 1, total_ms: sweepMs, ms_per_cell: sweepMs / (sweep.layers.length * doses.length) },
};
console.log(JSON.stringify(report, null, 2));
engine.dispose();
