/**
 * The runner's `probe` subcommand: linear probes per layer on a labelled prompt set
 * (workers/engine/studies/probe.ts), printed as one JSON object.
 */
import * as fs from 'node:fs';
import type { Engine } from '../workers/engine/engine';
import type { ModelSpec } from '../workers/engine/arch/spec';
import { assertHook } from '../workers/engine/model/hooks';
import { probeLayers, type ProbePosition } from '../workers/engine/studies/probe';
import { probeUnderIntervention, type ProbeUnderResult } from '../workers/engine/studies/probe_under';
import { DEFAULT_MOVE_THRESHOLD } from '../workers/engine/analysis/probe_shift';
import { resolveInterventions, runShapeOf } from '../workers/engine/studies/resolve_interventions';
import { parseSpec, type InterventionSpec } from '../workers/engine/steering/spec';
import { parseLabelledSet } from '../workers/engine/io/prompt_set';
import { bool, custom, int, num, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, ENABLE_THINKING, FOLDS, GOOD, PROBE_SEED, PROGRESS, SET, SYSTEM, TOOLS } from './shared_flags';
import { checkChatTurn, turnFlags, turnOfFlags } from './chat_turn';
import { loadVectorFile, parseJsonFlag } from './steering';

/** --position: where the probe reads each prompt. */
export const POSITION = custom(parsePosition, '"last" or a token index', 'last|INDEX', 'last', ['first', '1.5', '1e400', '--1']).describe('the token read (negative counts from the end; default last, or the set file\'s)');

export const PROBE_FLAGS = {
  set: SET.required(), position: POSITION, folds: FOLDS, seed: PROBE_SEED,
  l2: num({ gt: 0 }).describe('the L2 strength λ (default 1)'),
  directions: bool().default(false).describe('add the difference-of-means direction per row'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
  system: SYSTEM.describe('with --chat-template true: the system prompt of every prompt of the set'), tools: TOOLS, 'enable-thinking': ENABLE_THINKING,
  under: text('JSON', { nonEmpty: true }).describe('read the probes again under this intervention (one spec in the JSON of Interventions)'),
  good: GOOD.describe('with --under: the future the behaviour favours (default: the set file\'s suggested good)'),
  bad: BAD.describe('with --under: the other future (default: the set file\'s suggested bad)'),
  generate: int({ min: 0, max: 4096 }).default(0).describe('with --under: greedy new tokens per prompt in which to look for the good future (0 = none)'),
  'move-threshold': num({ min: 0, max: 1e6 }).default(DEFAULT_MOVE_THRESHOLD).describe('with --under: τ, a shift moves when |mean shift| ≥ τ × the gap between the classes\' means'),
};
export type ProbeFlags = Values<typeof PROBE_FLAGS>;

/** A labelled set file, read and parsed. @throws Error naming the flag for a missing file. */
export function readLabelledSet(file: string): ReturnType<typeof parseLabelledSet> {
  if (!fs.existsSync(file)) throw new Error(`--set ${file}: no such file`);
  return parseLabelledSet(file, fs.readFileSync(file, 'utf8'));
}

/** --folds at most the smaller class of the set. @throws Error naming the flag, the value and the class sizes. */
export function checkFolds(folds: number | undefined, set: { positive: readonly unknown[]; negative: readonly unknown[] }): void {
  const minClass = Math.min(set.positive.length, set.negative.length);
  if (folds !== undefined && folds > minClass) throw new Error(`--folds "${folds}": expected at most the smaller class of the set (${set.positive.length} positive, ${set.negative.length} negative: ≤ ${minClass})`);
}

/** --under as a spec: JSON and keys checked (no model needed). @throws Error labelled "--under". */
export function underSpec(json: string): InterventionSpec {
  return parseSpec(parseJsonFlag(json, '--under'), '--under');
}

/** --under's hook against the model's config, before any forward pass. @throws Error as assertHook, labelled "--under". */
export function checkProbeSpec(f: ProbeFlags, spec: ModelSpec): void {
  if (f.under === undefined) return;
  try {
    assertHook(spec, underSpec(f.under).hook);
  } catch (e) {
    throw new Error(`--under: ${(e as Error).message}`);
  }
}

/** The behaviour's futures of --under: the flags, else the set file's suggested ones. @throws Error when neither names both. */
function underFutures(f: ProbeFlags, set: ReturnType<typeof parseLabelledSet>): { good: string; bad: string } {
  const good = f.good ?? set.futures?.good, bad = f.bad ?? set.futures?.bad;
  if (good === undefined || bad === undefined) throw new Error(`--under measures the behaviour as the margin of two futures: give --good and --bad (${f.set} suggests none)`);
  return { good, bad };
}

/**
 * The chat turn's flags (chat_turn.ts checkChatTurn), the set read and --folds checked against it,
 * before the model loads; with --under its JSON and keys and the futures; the flags that only go
 * with --under refused without it.
 */
export function checkProbe(f: ProbeFlags, g: { given: (name: string) => boolean }): void {
  checkChatTurn(turnFlags(f));
  const set = readLabelledSet(f.set);
  checkFolds(f.folds, set);
  if (f.under === undefined) {
    const alone = ['good', 'bad', 'generate', 'move-threshold'].find((k) => g.given(k));
    if (alone) throw new Error(`--${alone} goes with --under JSON (the probes read under an intervention)`);
    return;
  }
  underSpec(f.under);
  underFutures(f, set);
}

export const PROBE_ABOUT = `probe prints {hooks, classes, accuracy, auroc, control_accuracy, control_auroc, first_layer_95, ...}: one
entry per row, row 0 = blocks.0.hook_resid_pre (embeddings), row l+1 = blocks.l.hook_resid_post; k-fold
held-out accuracy/AUROC of an L2 logistic regression, the same on shuffled labels (control), and the first
row reaching 95 % of the best accuracy. --directions true adds the difference-of-means direction per row.
Set files: {"positive": [...], "negative": [...]} JSON, {"text", "label"} JSONL, or CSV with text,label.
--under JSON trains the probes unsteered as above, runs every prompt again under the intervention and adds
accuracy_steered, auroc_steered [rows] (each prompt scored by its fold's probe, trained unsteered only);
score_shift [rows] {mean, lo, hi} (the probe fitted on all unsteered prompts, b + w·x in logits: mean of
steered − unsteered over the set, 95 % bootstrap interval) with score_gap (positive − negative class means);
behaviour_shift {mean, lo, hi} of the margin log p(good) − log p(bad) after each prompt (first tokens), with
margin_gap; flag [rows]: "reads-vector" when the score moves and the behaviour does not, "misses-behaviour"
when the behaviour moves and the score does not, null otherwise (and on rows the intervention does not
reach: reached [rows]); a shift moves when |mean| ≥ τ × |gap| (--move-threshold, default 0.25). With
--generate N, target_rate {unsteered, steered}: the fraction of prompts whose N greedy new tokens hold
the good future.`;

/** "last" or an integer token index (negative counts from the end). @throws Error for anything else. */
export function parsePosition(text: string): ProbePosition {
  if (text === 'last') return 'last';
  const n = /^-?\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) throw new Error(`--position ${text}: give "last" or a token index (negative counts from the end: -1 = last)`);
  return n;
}

/** The keys --under adds to the probe's JSON. */
function underKeys(r: ProbeUnderResult): Record<string, unknown> {
  const interval = (m: { mean: number; lo: number; hi: number }) => ({ mean: m.mean, lo: m.lo, hi: m.hi });
  return {
    accuracy_steered: r.accuracySteered, auroc_steered: r.aurocSteered,
    score_shift: r.scoreShift.map(interval), score_gap: r.scoreGap,
    behaviour_shift: interval(r.behaviourShift), margin_gap: r.marginGap,
    margin_unsteered: r.marginUnsteered, margin_steered: r.marginSteered,
    reached: r.reached, flag: r.flag, move_threshold: r.threshold,
    ...(r.target ? { target_rate: { new_tokens: r.target.newTokens, unsteered: r.target.rateUnsteered, steered: r.target.rateSteered } } : {}),
  };
}

/** `branchpoint probe` (with --under: probe_under.ts). Progress goes to stderr with --progress true. */
export async function probeCommand(engine: Engine, f: ProbeFlags): Promise<unknown> {
  const set = readLabelledSet(f.set);
  checkFolds(f.folds, set);
  const position = f.position ?? set.position ?? 'last';
  const l2 = f.l2;
  const onProgress = f.progress ? (p: { done: number; total: number }) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined;
  const req = { positive: set.positive, negative: set.negative, classes: set.classes, position, ...turnOfFlags(f), folds: f.folds, seed: f.seed, l2 };
  let under: ProbeUnderResult | null = null;
  if (f.under !== undefined) {
    const spec = underSpec(f.under);
    const futures = underFutures(f, set);
    const generate = f.generate;
    under = await probeUnderIntervention(engine, {
      ...req, good: { text: futures.good }, bad: { text: futures.bad }, generate, threshold: f['move-threshold'],
      interventions: (p) => resolveInterventions(engine, [spec], runShapeOf(engine, p, generate > 0 ? generate : undefined), {
        loadVector: loadVectorFile, label: () => '--under', warn: (m) => process.stderr.write(`warning: ${m}\n`),
      }),
    }, onProgress);
  }
  const r = under ?? await probeLayers(engine, req, onProgress);
  if (onProgress) process.stderr.write('\n');
  return {
    hooks: r.hooks, classes: r.classes, n_positive: r.nPositive, n_negative: r.nNegative, position: r.position,
    read_tokens: r.readTokens, folds: r.folds, seed: r.seed, l2: r.l2,
    accuracy: r.accuracy, auroc: r.auroc, control_accuracy: r.controlAccuracy, control_auroc: r.controlAuroc,
    best_accuracy: r.bestAccuracy, first_layer_95: r.firstLayer95,
    ...(f.directions ? { directions: r.directions.map((d) => Array.from(d)) } : {}),
    ...(under ? underKeys(under) : {}),
  };
}
