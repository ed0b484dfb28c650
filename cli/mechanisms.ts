/**
 * The runner's `mechanisms` subcommand: behaviour pairs (workers/engine/studies/mechanisms.ts, the
 * studies' table row `mechanisms`), printed as one JSON object.
 */
import * as fs from 'node:fs';
import type { Values } from './flags';
import { bool, custom, num, text } from './flags';
import { CHAT_TEMPLATE, ENABLE_THINKING, PROGRESS, SYSTEM, TOOLS } from './shared_flags';
import { checkChatTurn, turnOfFlags } from './chat_turn';
import { checkLayers, parseLayerList } from './steering';
import { parseBehaviourSet, type BehaviourSet } from '../workers/engine/io/behaviour_set';
import { parseControlSet } from '../workers/engine/io/control_set';
import { DEFAULT_DOSE, type Behaviour, type MechanismsRequest } from '../workers/engine/studies/mechanisms';
import { STUDIES, type StudyContext } from '../workers/engine/studies/registry';
import type { MeanInterval } from '../workers/engine/analysis/bootstrap';

const SET_FILE = (which: string) => text('FILE', { nonEmpty: true }).required().describe(`behaviour ${which}: a labelled set (.json, .jsonl or .csv) with its futures ("suggested": {good, bad}) or --good-${which.toLowerCase()}/--bad-${which.toLowerCase()}`);
const FUTURE = (which: string, side: string) => text().describe(`behaviour ${which}'s ${side} future (default the set file's)`);

export const MECHANISMS_FLAGS = {
  'set-a': SET_FILE('A'), 'set-b': SET_FILE('B'),
  'good-a': FUTURE('A', 'good'), 'bad-a': FUTURE('A', 'bad'), 'good-b': FUTURE('B', 'good'), 'bad-b': FUTURE('B', 'bad'),
  control: text('FILE', { nonEmpty: true }).describe('neutral prompts for the natural-correlation pool (.txt one per line, or .json {"texts": [...]}, e.g. public/control/stories.json)'),
  layers: custom(parseLayerList, 'layer indices or "all"', '0,1,2|all', '0,1', ['1,,2', '-1', 'all,1', '1.5', '99']).default('all').describe('the blocks analysed, each < n_layers'),
  dose: num().default(DEFAULT_DOSE).describe('α of the steering h += α·û at blocks.l.hook_resid_post (û a unit CAA direction), ≠ 0'),
  l2: num({ gt: 0 }).describe('the probes\' L2 strength λ (default 1)'),
  causal: bool().default(true).describe('the patching curves over each set\'s pairs (false: causal n/a)'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE, system: SYSTEM, tools: TOOLS, 'enable-thinking': ENABLE_THINKING,
};
export type MechanismsFlags = Values<typeof MECHANISMS_FLAGS>;

export const MECHANISMS_ABOUT = `mechanisms prints {layers, hooks, cos_caa, cos_probe, cross_steer: {a_on_a, a_on_b, b_on_b, b_on_a}, selectivity_a,
selectivity_b, natural_corr, causal, verdict, verdict_text, thresholds, cost}: per block l (blocks.l.hook_resid_post at each
prompt's read position) the cosine of the two sets' difference-of-means directions and of their probes' weights; x_on_y =
{mean, lo, hi, n}: the mean change of y's margin over y's prompts when x's unit direction is added at dose α at the read
position (95 % bootstrap interval); selectivity_a = |a_on_b|/|a_on_a|; natural_corr = Pearson r of the two probes' scores over
both sets and --control; causal = per set the mean over pairs (positive i, negative i of equal token length) of the max
resid_pre patching recovery per block, or "n/a"; verdict per block: shared / correlated / independent / mixed / no reach.`;

/** Reads a set file. @throws Error naming the flag for a missing file, and as parseBehaviourSet. */
function readSet(flag: string, file: string): BehaviourSet {
  if (!fs.existsSync(file)) throw new Error(`--${flag} ${file}: no such file`);
  return parseBehaviourSet(file, fs.readFileSync(file, 'utf8'));
}

/** A behaviour from its set file and the futures flags. @throws Error when no futures are named anywhere. */
function behaviour(f: MechanismsFlags, k: 'a' | 'b'): Behaviour {
  const set = readSet(`set-${k}`, f[`set-${k}`]);
  const good = f[`good-${k}`] ?? set.futures?.good, bad = f[`bad-${k}`] ?? set.futures?.bad;
  if (!good || !bad) throw new Error(`--set-${k} ${f[`set-${k}`]}: names no futures; add "suggested": {"good", "bad"} to the file or give --good-${k} and --bad-${k}`);
  return { name: set.name, positive: set.positive, negative: set.negative, position: set.position, good: { text: good }, bad: { text: bad } };
}

/** The request from the flags (files read and parsed). @throws Error naming the flag at fault. */
function request(f: MechanismsFlags): MechanismsRequest {
  if (f.dose === 0) throw new Error('--dose 0: steering by 0 changes nothing, so the cross-steering matrix is undefined; give α ≠ 0');
  let control: string[] | undefined;
  if (f.control !== undefined) {
    if (!fs.existsSync(f.control)) throw new Error(`--control ${f.control}: no such file`);
    control = parseControlSet(f.control, fs.readFileSync(f.control, 'utf8')).texts;
  }
  return {
    a: behaviour(f, 'a'), b: behaviour(f, 'b'), control,
    layers: f.layers === 'all' ? undefined : f.layers, dose: f.dose, l2: f.l2, causal: f.causal, ...turnOfFlags(f),
  };
}

/** The files read and the flags combined, before the model loads. */
export function checkMechanisms(f: MechanismsFlags): void {
  checkChatTurn(f);
  request(f);
}

const interval = (m: MeanInterval) => ({ mean: m.mean, lo: m.lo, hi: m.hi, n: m.n });

/** `branchpoint mechanisms`. Progress goes to stderr with --progress true. */
export async function mechanismsCommand(study: StudyContext, f: MechanismsFlags): Promise<unknown> {
  checkLayers(f.layers, study.engine.spec.nLayers);
  const req = request(f);
  const r = await STUDIES.mechanisms.run(study, req, f.progress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (f.progress) process.stderr.write('\n');
  const causal = (c: typeof r.causal.a) => (c ? { curve: c.curve, first_block: c.firstBlock, pairs: c.pairs, skipped: c.skipped } : 'n/a');
  return {
    names: r.names, layers: r.layers, hooks: r.hooks, dose: r.dose,
    cos_caa: r.cosCaa, cos_probe: r.cosProbe,
    cross_steer: { a_on_a: r.crossSteer.aOnA.map(interval), a_on_b: r.crossSteer.aOnB.map(interval), b_on_b: r.crossSteer.bOnB.map(interval), b_on_a: r.crossSteer.bOnA.map(interval) },
    selectivity_a: r.selectivityA, selectivity_b: r.selectivityB,
    natural_corr: r.naturalCorr, pool: r.pool,
    causal: { a: causal(r.causal.a), b: causal(r.causal.b), similarity: r.causal.similarity ?? 'n/a' },
    verdict: r.verdict.map((v) => v.kind), verdict_text: r.verdict.map((v) => v.text),
    thresholds: { shared_cosine: r.thresholds.sharedCosine, mutual_selectivity: r.thresholds.mutualSelectivity, natural_correlation: r.thresholds.naturalCorrelation, min_reach: r.thresholds.minReach },
    unsteered_margin: r.unsteered,
    cost: { cells: r.cost.cells, forward_equivalents_per_cell: r.cost.forwardEquivalentsPerCell, naive_per_cell: r.cost.naivePerCell, overhead_forwards: r.cost.overheadForwards, positions_computed: r.cost.positionsComputed },
    interval: r.interval,
  };
}
