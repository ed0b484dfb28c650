/**
 * The runner's `side-effects` subcommand: an intervention's reach and side effects over a dose grid
 * and its operating window (workers/engine/studies/side_effects.ts, one row of the studies' table),
 * as one JSON object.
 */
import * as fs from 'node:fs';
import { DEFAULT_BUDGETS, checkBudgets } from '../workers/engine/analysis/operating_window';
import { parseControlSet, type ControlSet } from '../workers/engine/io/control_set';
import type { InterventionSpec } from '../workers/engine/steering/spec';
import { STUDIES, type StudyContext } from '../workers/engine/studies/registry';
import { sideEffectDoseKey, type BehaviourSet, type SideEffectsRequest, type SideEffectsResult } from '../workers/engine/studies/side_effects';
import type { MeanInterval } from '../workers/engine/analysis/bootstrap';
import { custom, num, numList, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, ENABLE_THINKING, GOOD, INTERVENTION, PROGRESS, SET, SYSTEM, TOOLS } from './shared_flags';
import { checkChatTurn, turnFlags, turnOfFlags } from './chat_turn';
import { readLabelledSet } from './probe';
import { checkLayers, interventionSpecs, loadVectorFile, parseLayerList } from './steering';

const D = DEFAULT_BUDGETS;

export const SIDE_EFFECTS_FLAGS = {
  intervention: INTERVENTION.describe('the intervention (see Interventions), exactly one; each dose replaces its alpha / theta / value; {l} in its hook with --layers'),
  set: SET.required().describe('the target behaviour: a prompt set (.json, .jsonl or .csv); reach = its margin\'s mean change'),
  good: GOOD.describe('the target\'s good future (default: the set file\'s "suggested" good)'),
  bad: BAD.describe('the target\'s bad future (default: the set file\'s "suggested" bad)'),
  control: text('FILE', { nonEmpty: true }).required().describe('unrelated texts: .json {"texts": [...]} or .txt, one per line (public/control/*.json)'),
  other: text('FILE', { nonEmpty: true }).repeatable().describe('another behaviour\'s set (with "suggested" futures) whose margin should not move'),
  doses: numList('-4,0,2,4,8').required().describe('the doses (alpha; theta in radians for rotate; value for sae_clamp)'),
  layers: custom(parseLayerList, 'layer indices or "all"', '0,1,2|all', '0,1', ['1,,2', '-1', 'all,1', '1.5', '99']).describe('the layers {l} stands for (one row of results each)'),
  reach: num().default(D.reach).describe(`R: the least mean margin change in nats (default ${D.reach})`),
  'kl-budget': num().default(D.kl).describe(`the most mean next-token KL on the control texts, nats (default ${D.kl})`),
  'll-budget': num().default(D.ll).describe(`the most drop of the control log-likelihood, nats per token (default ${D.ll})`),
  'other-budget': num().default(D.other).describe(`the most |margin change| of each --other set, nats (default ${D.other})`),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
  system: SYSTEM.describe('with --chat-template true: the system prompt of the target\'s and the others\' prompts (the control texts stay plain text)'), tools: TOOLS, 'enable-thinking': ENABLE_THINKING,
};
export type SideEffectsFlags = Values<typeof SIDE_EFFECTS_FLAGS>;

export const SIDE_EFFECTS_ABOUT = `side-effects prints {doses, dose_key, hooks, reach, reach_lo, reach_hi, kl, delta_ll, others: {name: shift}, pass, why,
window, budgets, unsteered, counts, reuse}: per dose (per [layer][dose] with --layers) reach = the target set's mean margin
change Δ = log p(good) − log p(bad) (teacher-forced; 95 % bootstrap interval reach_lo..reach_hi), kl = mean
KL(p_unsteered ‖ p_steered) of the next token over every position of every control text (nats), delta_ll = the control
log-likelihood's change, nats per token (steered − unsteered). window = [lo, hi], the longest run of consecutive doses
with reach ≥ R, kl ≤ --kl-budget, delta_ll ≥ −--ll-budget and every |other shift| ≤ --other-budget; null = empty (no
dose passes; why says what each dose misses). Defaults: R = ${D.reach} nat, KL ≤ ${D.kl} nats, a drop ≤ ${D.ll} nats/token,
others ≤ ${D.other} nats. reuse = {computed, full}: positions run, against every text in full at every dose (prefix KV reuse).`;

/** A behaviour set file: its prompts (both classes) and its futures (flags, else the file's "suggested"). @throws Error naming the flag and file. */
function behaviour(flag: string, file: string, good?: string, bad?: string): BehaviourSet {
  const set = readLabelledSet(file);
  let suggested: { good?: unknown; bad?: unknown } | undefined;
  if (file.toLowerCase().endsWith('.json')) suggested = (JSON.parse(fs.readFileSync(file, 'utf8')) as { suggested?: { good?: unknown; bad?: unknown } }).suggested;
  const g = good ?? (typeof suggested?.good === 'string' ? suggested.good : undefined);
  const b = bad ?? (typeof suggested?.bad === 'string' ? suggested.bad : undefined);
  if (g === undefined || b === undefined) throw new Error(`${flag} ${file}: the set names no futures ("suggested": {"good", "bad"})${flag === '--set' ? '; give --good and --bad' : ''}`);
  return { name: file.replace(/^.*[\\/]/, ''), prompts: [...set.positive, ...set.negative], good: { text: g }, bad: { text: b } };
}

/** The control file, read. @throws Error naming the flag for a missing file, and as parseControlSet does. */
function readControl(file: string): ControlSet {
  if (!fs.existsSync(file)) throw new Error(`--control ${file}: no such file`);
  return parseControlSet(file, fs.readFileSync(file, 'utf8'));
}

/**
 * The one --intervention spec (main.ts has parsed its JSON and keys) without its dose, which --doses sets.
 * @throws Error labelled "--intervention" for none or several, or a type without a dose.
 */
function template(texts: readonly string[]): Omit<InterventionSpec, 'alpha' | 'theta' | 'value'> {
  if (texts.length !== 1) throw new Error(`--intervention: side-effects varies the dose of exactly one intervention; got ${texts.length}${texts.length > 1 ? ' (an experiment file adds its enabled ones: keep one enabled, or pass --intervention without --experiment)' : ''}`);
  const [spec] = interventionSpecs(texts);
  let key: ReturnType<typeof sideEffectDoseKey>;
  try {
    key = sideEffectDoseKey(spec.type);
  } catch (e) {
    throw new Error(`--intervention: ${(e as Error).message}`);
  }
  const { [key]: _dose, ...rest } = spec;
  return rest;
}

/** The flags' files and values read and checked before the model loads (the chat turn's by chat_turn.ts checkChatTurn). @throws Error naming the flag. */
export function checkSideEffects(f: SideEffectsFlags): void {
  checkChatTurn(turnFlags(f));
  template(f.intervention);
  behaviour('--set', f.set, f.good, f.bad);
  for (const o of f.other) behaviour('--other', o);
  readControl(f.control);
  checkBudgets({ reach: f.reach, kl: f['kl-budget'], ll: f['ll-budget'], other: f['other-budget'] }, { reach: '--reach', kl: '--kl-budget', ll: '--ll-budget', other: '--other-budget' });
}

const flat = <T>(rows: T[][], layered: boolean): T[] | T[][] => (layered ? rows : rows[0]);

/** The JSON object of a result (the shapes SIDE_EFFECTS_ABOUT names). */
export function sideEffectsJson(r: SideEffectsResult): Record<string, unknown> {
  const L = r.layers !== null;
  const part = (k: keyof MeanInterval) => flat(r.reach.map((row) => row.map((x) => x[k])), L);
  return {
    doses: r.doses, dose_key: r.doseKey, hooks: r.hooks, ...(L ? { layers: r.layers } : {}),
    reach: part('mean'), reach_lo: part('lo'), reach_hi: part('hi'),
    kl: flat(r.kl, L), delta_ll: flat(r.deltaLl, L),
    others: Object.fromEntries(r.others.map((o) => [o.name, flat(o.shift.map((row) => row.map((x) => x.mean)), L)])),
    pass: flat(r.pass, L), why: flat(r.why, L), window: L ? r.window : r.window[0],
    budgets: r.budgets, unsteered: { margin: r.unsteered.margin, ll_per_token: r.unsteered.llPerToken, other_margins: r.unsteered.otherMargins },
    counts: r.counts, reuse: r.reuse,
  };
}

/** `branchpoint side-effects`: the vector file of --intervention is read first; progress to stderr with --progress true. */
export async function sideEffectsCommand(study: StudyContext, f: SideEffectsFlags): Promise<unknown> {
  const engine = study.engine;
  let tpl = template(f.intervention);
  if (typeof tpl.vector === 'string') tpl = { ...tpl, vector: Array.from(loadVectorFile(tpl.vector).vector) };
  if (f.layers !== undefined) checkLayers(f.layers, engine.spec.nLayers);
  const layers = f.layers === 'all' ? Array.from({ length: engine.spec.nLayers }, (_, l) => l) : f.layers;
  const req: SideEffectsRequest = {
    template: tpl, ...(layers ? { layers } : {}), doses: f.doses,
    target: behaviour('--set', f.set, f.good, f.bad), control: readControl(f.control).texts,
    others: f.other.map((o) => behaviour('--other', o)),
    budgets: { reach: f.reach, kl: f['kl-budget'], ll: f['ll-budget'], other: f['other-budget'] },
    ...turnOfFlags(f),
  };
  const r = await STUDIES.sideEffects.run(study, req, f.progress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (f.progress) process.stderr.write('\n');
  return sideEffectsJson(r);
}
