/**
 * The runner's `probe` subcommand: linear probes per layer on a labelled prompt set
 * (workers/engine/studies/probe.ts), printed as one JSON object.
 */
import * as fs from 'node:fs';
import type { Engine } from '../workers/engine/engine';
import { probeLayers, type ProbePosition } from '../workers/engine/studies/probe';
import { parseLabelledSet } from '../workers/engine/io/prompt_set';
import { intFlag, type Args } from './args';

export const PROBE_USAGE = `  branchpoint probe    --model DIR --set FILE.json|.jsonl|.csv [--position last|INDEX]
                       [--folds 5] [--seed 0] [--l2 1] [--chat-template true]
probe prints {hooks, classes, accuracy, auroc, control_accuracy, control_auroc, first_layer_95, ...}: one
entry per row, row 0 = blocks.0.hook_resid_pre (embeddings), row l+1 = blocks.l.hook_resid_post; k-fold
held-out accuracy/AUROC of an L2 logistic regression, the same on shuffled labels (control), and the first
row reaching 95 % of the best accuracy. --directions true adds the difference-of-means direction per row.
Set files: {"positive": [...], "negative": [...]} JSON, {"text", "label"} JSONL, or CSV with text,label.`;

/** "last" or an integer token index (negative counts from the end). @throws Error for anything else. */
export function parsePosition(text: string): ProbePosition {
  if (text === 'last') return 'last';
  const n = Number(text);
  if (!Number.isInteger(n)) throw new Error(`--position ${text}: give "last" or a token index (negative counts from the end: -1 = last)`);
  return n;
}

/** `branchpoint probe`. Progress goes to stderr with --progress true. */
export async function probeCommand(engine: Engine, a: Args, required: (key: string) => string): Promise<unknown> {
  const file = required('set');
  if (!fs.existsSync(file)) throw new Error(`--set ${file}: no such file`);
  const set = parseLabelledSet(file, fs.readFileSync(file, 'utf8'));
  const position = a.flags.has('position') ? parsePosition(a.flags.get('position')!) : set.position ?? 'last';
  const l2 = a.flags.has('l2') ? Number(a.flags.get('l2')) : undefined;
  if (l2 !== undefined && !(l2 > 0)) throw new Error(`--l2 ${a.flags.get('l2')}: give a positive number (the L2 strength λ)`);
  const showProgress = a.flags.get('progress') === 'true';
  const r = await probeLayers(engine, {
    positive: set.positive, negative: set.negative, classes: set.classes, position,
    chatTemplate: a.flags.get('chat-template') === 'true', folds: intFlag(a, 'folds'), seed: intFlag(a, 'seed'), l2,
  }, showProgress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (showProgress) process.stderr.write('\n');
  return {
    hooks: r.hooks, classes: r.classes, n_positive: r.nPositive, n_negative: r.nNegative, position: r.position,
    read_tokens: r.readTokens, folds: r.folds, seed: r.seed, l2: r.l2,
    accuracy: r.accuracy, auroc: r.auroc, control_accuracy: r.controlAccuracy, control_auroc: r.controlAuroc,
    best_accuracy: r.bestAccuracy, first_layer_95: r.firstLayer95,
    ...(a.flags.get('directions') === 'true' ? { directions: r.directions.map((d) => Array.from(d)) } : {}),
  };
}
