/**
 * The Compare job's cost (studies/compare_job.ts, what the Compare view runs) against one
 * single-model Analyse, CPU backend in Node (`npx tsx bench/compare.ts`; LAYERS=4 for a quick
 * run): on a SmolLM-135M-shaped random pair — A from bench/smollm_random.ts (LAYERS blocks, default
 * SmolLM's 30), B = A with one block's MLP down_proj perturbed (block PERTURB, default the middle
 * one) — on one prompt. Each figure is printed with the 1-minute load average when it was
 * measured. It also checks that the cross-model grid runs with prefix KV reuse: the token
 * positions its patched runs computed against the naive count (every patched run a full forward),
 * and one hook's grid timed both ways (crossPatch reuse: false). Asserts nothing.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { compareJob } from '../workers/engine/studies/compare_job';
import { crossPatch } from '../workers/engine/studies/cross_patch';
import { seededRandom } from '../workers/engine/analysis/sampling';
import { encodeSafetensors, type TensorToWrite } from '../tools/safetensors_write';
import { llamaTensors, smolLM135MRandom, SMOLLM_135M } from './smollm_random';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LAYERS = Number(process.env.LAYERS ?? SMOLLM_135M.num_hidden_layers);
const PERTURB = Number(process.env.PERTURB ?? Math.floor(LAYERS / 2));
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const config = { ...SMOLLM_135M, num_hidden_layers: LAYERS };
const load1 = () => Number(os.loadavg()[0].toFixed(2));

/** Model B: model A's folder with block PERTURB's mlp.down_proj plus 5 % uniform noise (everything else the same F16 bytes). */
function perturbedCopy(dirA: string): string {
  const dir = path.join(ROOT, '.artifacts', 'bench', `smollm-135m-random-L${LAYERS}-b${PERTURB}`);
  if (fs.existsSync(path.join(dir, '.complete'))) return dir;
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(dirA, f), path.join(dir, f));
  const rand = seededRandom(7);
  const name = `model.layers.${PERTURB}.mlp.down_proj.weight`;
  const tensors = llamaTensors(config).map((t): TensorToWrite => {
    if (t.name !== name) return { ...t, dtype: 'F16' };
    const data = Float32Array.from(t.data, (x) => x * (1 + 0.05 * (rand() * 2 - 1)));
    return { ...t, data, dtype: 'F16' };
  });
  fs.writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensors(tensors));
  fs.writeFileSync(path.join(dir, '.complete'), '');
  return dir;
}

const dirA = smolLM135MRandom(path.join(ROOT, '.artifacts', 'bench', `smollm-135m-random-L${LAYERS}`), config);
const dirB = perturbedCopy(dirA);
const a = await Engine.load(new NodeFiles(dirA), new CpuBackend());
const b = await Engine.load(new NodeFiles(dirB), new CpuBackend());
// token ids < 512 only (stories260K's tokenizer over a 49152-row embedding): a short story prompt
const req = { prompt: 'Once upon a time, there was a little girl named Lily. She felt very', good: { text: ' happy' }, bad: { text: ' sad' } };
const T = a.encodePrompt(req).length;

await a.analyse(req); // warm-up (JIT)
const analyseMs: { ms: number; load: number }[] = [], compareMs: { ms: number; load: number }[] = [];
let last: Awaited<ReturnType<typeof compareJob>> | null = null;
for (let r = 0; r < ROUNDS; r++) {
  let t0 = performance.now();
  await a.analyse(req);
  analyseMs.push({ ms: Math.round(performance.now() - t0), load: load1() });
  t0 = performance.now();
  last = await compareJob(a, b, req);
  compareMs.push({ ms: Math.round(performance.now() - t0), load: load1() });
  console.error(`round ${r + 1}: analyse ${analyseMs[r].ms} ms (load ${analyseMs[r].load}), compare ${compareMs[r].ms} ms (load ${compareMs[r].load})`);
}
const c = last!;
const grids = [...c.crossPatch, ...c.crossPatchReverse];
const patchedRuns = grids.reduce((n, g) => n + g.nLayers + (g.hook === 'z' ? g.nLayers * g.nCols : 0), 0);
const positions = grids.reduce((n, g) => n + g.positionsComputed, 0);
const skipped = grids.reduce((n, g) => n + g.cellsSkipped, 0);

// one hook's grid with and without prefix reuse (per position, so reuse has something to reuse)
const oneHook: Record<string, { ms: number; load: number; positions: number; forward_equivalents: number }> = {};
for (const reuse of [true, false]) {
  const t0 = performance.now();
  const g = await crossPatch(a, b, { ...req, hook: 'resid_pre', cells: true, reuse });
  oneHook[reuse ? 'reuse' : 'naive'] = { ms: Math.round(performance.now() - t0), load: load1(), positions: g.positionsComputed, forward_equivalents: Number((g.positionsComputed / T).toFixed(1)) };
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const changed = c.weights!.modules.flatMap((m) => Array.from(m.values).flatMap((v, l) => (v !== 0 ? [`${l}.${m.name}`] : [])));
console.log(JSON.stringify({
  model: `SmolLM-135M-shaped random Llama, ${LAYERS} layers (d_model 576, 9/3 heads, d_mlp 1536, vocab 49152), B = A with block ${PERTURB}'s down_proj perturbed`,
  backend: a.backend.description, node: process.version, cpus: os.cpus().length, date: new Date().toISOString(), n_tokens: T, rounds: ROUNDS,
  analyse_ms: analyseMs, compare_ms: compareMs,
  compare_over_analyse: Number((median(compareMs.map((x) => x.ms)) / median(analyseMs.map((x) => x.ms))).toFixed(1)),
  weight_diff_nonzero: changed,
  cross_patch: {
    hooks: c.crossPatch.map((g) => g.hook), directions: 2, patched_runs: patchedRuns,
    positions_computed: positions, naive_positions: patchedRuns * T, cells_skipped: skipped,
    position_ratio: Number(((patchedRuns * T) / Math.max(1, positions)).toFixed(2)),
    // a forward-equivalent = T token positions (one full forward of the prompt)
    forward_equivalents: Number((positions / T).toFixed(1)), naive_forward_equivalents: patchedRuns,
    mlp_out_b_into_a: Array.from(c.crossPatch.find((g) => g.hook === 'mlp_out')!.layerRecovery, (x) => Number(x.toFixed(4))),
  },
  resid_pre_per_position_grid: oneHook,
}, null, 2));
a.dispose();
b.dispose();
