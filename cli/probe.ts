/**
 * The runner's `probe` subcommand: linear probes per layer on a labelled prompt set
 * (workers/engine/studies/probe.ts), printed as one JSON object.
 */
import * as fs from 'node:fs';
import type { Engine } from '../workers/engine/engine';
import { probeLayers, type ProbePosition } from '../workers/engine/studies/probe';
import { parseLabelledSet } from '../workers/engine/io/prompt_set';
import { bool, custom, num, type Values } from './flags';
import { CHAT_TEMPLATE, FOLDS, PROBE_SEED, PROGRESS, SET } from './shared_flags';

/** --position: where the probe reads each prompt. */
export const POSITION = custom(parsePosition, '"last" or a token index', 'last|INDEX', 'last', ['first', '1.5', '1e400', '--1']).describe('the token read (negative counts from the end; default last, or the set file\'s)');

export const PROBE_FLAGS = {
  set: SET.required(), position: POSITION, folds: FOLDS, seed: PROBE_SEED,
  l2: num({ gt: 0 }).describe('the L2 strength λ (default 1)'),
  directions: bool().default(false).describe('add the difference-of-means direction per row'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
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

/** The set read and --folds checked against it, before the model loads. */
export function checkProbe(f: ProbeFlags): void {
  checkFolds(f.folds, readLabelledSet(f.set));
}

export const PROBE_ABOUT = `probe prints {hooks, classes, accuracy, auroc, control_accuracy, control_auroc, first_layer_95, ...}: one
entry per row, row 0 = blocks.0.hook_resid_pre (embeddings), row l+1 = blocks.l.hook_resid_post; k-fold
held-out accuracy/AUROC of an L2 logistic regression, the same on shuffled labels (control), and the first
row reaching 95 % of the best accuracy. --directions true adds the difference-of-means direction per row.
Set files: {"positive": [...], "negative": [...]} JSON, {"text", "label"} JSONL, or CSV with text,label.`;

/** "last" or an integer token index (negative counts from the end). @throws Error for anything else. */
export function parsePosition(text: string): ProbePosition {
  if (text === 'last') return 'last';
  const n = /^-?\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) throw new Error(`--position ${text}: give "last" or a token index (negative counts from the end: -1 = last)`);
  return n;
}

/** `branchpoint probe`. Progress goes to stderr with --progress true. */
export async function probeCommand(engine: Engine, f: ProbeFlags): Promise<unknown> {
  const set = readLabelledSet(f.set);
  checkFolds(f.folds, set);
  const position = f.position ?? set.position ?? 'last';
  const l2 = f.l2;
  const showProgress = f.progress;
  const r = await probeLayers(engine, {
    positive: set.positive, negative: set.negative, classes: set.classes, position,
    chatTemplate: f['chat-template'], folds: f.folds, seed: f.seed, l2,
  }, showProgress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (showProgress) process.stderr.write('\n');
  return {
    hooks: r.hooks, classes: r.classes, n_positive: r.nPositive, n_negative: r.nNegative, position: r.position,
    read_tokens: r.readTokens, folds: r.folds, seed: r.seed, l2: r.l2,
    accuracy: r.accuracy, auroc: r.auroc, control_accuracy: r.controlAccuracy, control_auroc: r.controlAuroc,
    best_accuracy: r.bestAccuracy, first_layer_95: r.firstLayer95,
    ...(f.directions ? { directions: r.directions.map((d) => Array.from(d)) } : {}),
  };
}
