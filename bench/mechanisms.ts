/**
 * The Mechanisms study's cross-steering matrix (studies/mechanisms.ts) on a SmolLM-135M-shaped
 * random model (bench/smollm_random.ts; LAYERS blocks, default SmolLM's 30), CPU backend in Node
 * (`npx tsx bench/mechanisms.ts`; LAYERS=4 for a quick run): two sets of 20 prompts (10 + 10 each,
 * from the shipped happy/sad and he/she sets, token ids < 512), patching off. Prints the study's
 * time split by phase (read = the capture forwards, steer = the reference forwards and every steered
 * run), the forward-equivalents per cell (a cell = one direction × one set × one block over that set's
 * prompts; naively one full forward per prompt), and the steered runs of one block timed again the
 * naive way (a full forward per prompt and direction) for the per-cell ratio, each with the 1-minute
 * load average. Asserts nothing.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { parseBehaviourSet } from '../workers/engine/io/behaviour_set';
import { mechanismsStudy, type Behaviour } from '../workers/engine/studies/mechanisms';
import { smolLM135MRandom, SMOLLM_135M } from './smollm_random';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LAYERS = Number(process.env.LAYERS ?? SMOLLM_135M.num_hidden_layers);
const PER_CLASS = 10;
const DOSE = 4;
const load1 = () => Number(os.loadavg()[0].toFixed(2));

const behaviour = (file: string): Behaviour => {
  const s = parseBehaviourSet(file, fs.readFileSync(path.join(ROOT, 'public', file), 'utf8'));
  return { name: s.name, positive: s.positive.slice(0, PER_CLASS), negative: s.negative.slice(0, PER_CLASS), good: { text: s.futures!.good }, bad: { text: s.futures!.bad } };
};
const a = behaviour('steering/happy_sad.json'), b = behaviour('probes/he_she.json');

const config = { ...SMOLLM_135M, num_hidden_layers: LAYERS };
const dir = smolLM135MRandom(path.join(ROOT, '.artifacts', 'bench', `smollm-135m-random-L${LAYERS}`), config);
const engine = await Engine.load(new NodeFiles(dir), new CpuBackend());
const nPrompts = 4 * PER_CLASS;
const lengths = [...a.positive, ...a.negative, ...b.positive, ...b.negative].map((p) => engine.encodePrompt({ prompt: p }).length);
await engine.run(engine.encodePrompt({ prompt: a.positive[0] }), { logits: 'last' }); // warm-up (JIT)

// The study, with its phases read off the progress stamps (nPrompts capture forwards, then nPrompts steered prompts).
const stamps: number[] = [];
const t0 = performance.now();
const loadStart = load1();
const r = await mechanismsStudy(engine, { a, b, dose: DOSE, causal: false, bootstrap: { resamples: 200 } }, () => stamps.push(performance.now()));
const total = performance.now() - t0;
const readMs = stamps[nPrompts - 1] - t0, steerMs = stamps[2 * nPrompts - 1] - stamps[nPrompts - 1];
const loadStudy = load1();

// One block's four cells the naive way: a full forward per prompt and direction (the unsteered margin not counted).
const mid = Math.floor(LAYERS / 2);
const t1 = performance.now();
let naiveRuns = 0;
const hook = `blocks.${mid}.hook_resid_post`;
const v = new Float32Array(engine.spec.dModel).fill(1 / Math.sqrt(engine.spec.dModel)); // any unit vector: the cost does not depend on it
for (const p of [...a.positive, ...a.negative, ...b.positive, ...b.negative]) {
  const ids = engine.encodePrompt({ prompt: p });
  for (let k = 0; k < 2; k++) {
    await engine.run(ids, { logits: 'last', interventions: [{ hook, op: { kind: 'add', v, alpha: DOSE }, positions: [ids.length - 1] }] });
    naiveRuns++;
  }
}
const naiveMs = performance.now() - t1;
const loadNaive = load1();

const cells = r.cost.cells;
const perCellReuse = steerMs / cells, perCellNaive = naiveMs / 4;
console.log(JSON.stringify({
  model: `SmolLM-135M-shaped random, ${LAYERS} blocks, d_model ${engine.spec.dModel}, vocab ${engine.spec.dVocab}`,
  sets: `2 × ${2 * PER_CLASS} prompts, ${Math.min(...lengths)}–${Math.max(...lengths)} tokens (mean ${(lengths.reduce((s, x) => s + x, 0) / lengths.length).toFixed(1)})`,
  study_ms: Math.round(total), read_ms: Math.round(readMs), steer_ms: Math.round(steerMs), load_start: loadStart, load_study: loadStudy,
  cells, forward_equivalents_per_cell: Number(r.cost.forwardEquivalentsPerCell.toFixed(3)), naive_per_cell: r.cost.naivePerCell, overhead_forwards: r.cost.overheadForwards,
  positions_computed: r.cost.positionsComputed, naive_positions: lengths.reduce((s, T) => s + T, 0) * 2 * LAYERS,
  ms_per_cell_reuse: Math.round(perCellReuse), ms_per_cell_naive: Math.round(perCellNaive), naive_runs_timed: naiveRuns, load_naive: loadNaive,
  speedup_per_cell: Number((perCellNaive / perCellReuse).toFixed(1)),
}, null, 2));
engine.dispose();
