/**
 * The runner's `report` subcommand: the decision-point report of workers/engine/studies/report.ts
 * (visible / causal / changeable on one layer and step axis) as one JSON object — the numbers the
 * Report view shows.
 */
import * as fs from 'node:fs';
import type { Engine } from '../workers/engine/engine';
import { decisionReport, type ReportWindow } from '../workers/engine/studies/report';
import { reportJson } from '../workers/engine/studies/report_json';
import { parseLabelledSet } from '../workers/engine/io/prompt_set';
import { intFlag, type Args } from './args';
import { parsePosition } from './probe';
import { interventionsFromArgs } from './steering';
import { parseScore } from './window';

export const REPORT_USAGE = `  branchpoint report   --model DIR --clean TEXT --corrupt TEXT --good TEXT --bad TEXT
                       [--threshold 0.1] [--intervention JSON --max-new-tokens N [--k-max K] [--score …]]
                       [--set FILE.json|.jsonl|.csv [--position last|INDEX] [--folds 5] [--seed 0]]
report prints {visible_layer, visible_token, first_layer_95, causal_layer (from block 1: row 0, the embeddings, is the
clean token itself where the prompts differ: causal_trivial_positions, _recovery), causal_positions, point_of_no_return,
label, lens_margin: [n_layers+1] (toward the final answer), max_recovery: [n_layers], probe_accuracy: [n_layers+1],
window_ks, window_outcome: [K+1], intervals and bands (with --set), patch: {… as patch --hook resid_pre}};
layers are residual rows (0 = embeddings, l = entering block l). --intervention/--score as in window (the
changeable panel); --set is a labelled set as in probe: the probe runs on it, and every prompt of it joins
the intervals, patched against the other class's prompt at the same index (pairs of unequal length: lens only).`;

/** `branchpoint report`: the decision-point report as JSON. Progress goes to stderr with --progress true. */
export async function reportCommand(engine: Engine, a: Args, required: (key: string) => string): Promise<unknown> {
  const threshold = a.flags.has('threshold') ? Number(a.flags.get('threshold')) : undefined;
  if (threshold !== undefined && !(threshold >= 0)) throw new Error(`--threshold ${a.flags.get('threshold')}: give |Δ| in nats, ≥ 0`);
  const chatTemplate = a.flags.get('chat-template') === 'true';
  let window: ReportWindow | undefined;
  if (a.repeated.get('intervention')?.length) {
    const N = Number(required('max-new-tokens'));
    if (!Number.isInteger(N) || N < 1) throw new Error(`--max-new-tokens ${a.flags.get('max-new-tokens')}: give a positive integer`);
    window = {
      maxNewTokens: N, kMax: intFlag(a, 'k-max'), score: a.flags.has('score') ? parseScore(a.flags.get('score')!) : undefined,
      interventions: (p) => interventionsFromArgs(engine, a, { nPrompt: p.nPrompt, maxNewTokens: N, chatTemplate }),
    };
  } else if (a.flags.has('max-new-tokens')) {
    throw new Error('--max-new-tokens without --intervention: the changeable panel needs the intervention switched on from step k (JSON, repeatable)');
  }
  let labelled;
  if (a.flags.has('set')) {
    const file = a.flags.get('set')!;
    if (!fs.existsSync(file)) throw new Error(`--set ${file}: no such file`);
    const set = parseLabelledSet(file, fs.readFileSync(file, 'utf8'));
    labelled = { ...set, position: a.flags.has('position') ? parsePosition(a.flags.get('position')!) : set.position };
  }
  const showProgress = a.flags.get('progress') === 'true';
  const r = await decisionReport(engine, {
    clean: required('clean'), corrupt: required('corrupt'), chatTemplate,
    good: { text: required('good') }, bad: { text: required('bad') }, threshold, window, labelled,
    probe: { folds: intFlag(a, 'folds'), seed: intFlag(a, 'seed') },
  }, showProgress ? (p) => process.stderr.write(`\r${p.stage} (${p.done}/${p.total})\x1b[K`) : undefined);
  if (showProgress) process.stderr.write('\n');
  return reportJson(r);
}
