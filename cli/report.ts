/**
 * The runner's `report` subcommand: the decision-point report of workers/engine/analysis/report.ts
 * (visible / causal / changeable on one layer and step axis) as one JSON object — the numbers the
 * Report view shows.
 */
import type { Engine } from '../workers/engine/engine';
import { decisionReport } from '../workers/engine/analysis/report';
import { reportJson } from '../workers/engine/analysis/report_json';
import type { Args } from './args';

export const REPORT_USAGE = `  branchpoint report   --model DIR --clean TEXT --corrupt TEXT --good TEXT --bad TEXT
                       [--threshold 0.1] [--intervention JSON --max-new-tokens N] [--set FILE]
report prints {visible_layer, visible_token, causal_layer, causal_positions, point_of_no_return, label,
lens_margin: [n_layers+1] (toward the final answer), max_recovery: [n_layers], intervals (with --set),
patch: {… as patch --hook resid_pre}}; layers are residual rows (0 = embeddings, l = entering block l).`;

/** `branchpoint report`: the decision-point report as JSON. Progress goes to stderr with --progress true. */
export async function reportCommand(engine: Engine, a: Args, required: (key: string) => string): Promise<unknown> {
  const threshold = a.flags.has('threshold') ? Number(a.flags.get('threshold')) : undefined;
  if (threshold !== undefined && !(threshold >= 0)) throw new Error(`--threshold ${a.flags.get('threshold')}: give |Δ| in nats, ≥ 0`);
  const showProgress = a.flags.get('progress') === 'true';
  const r = await decisionReport(engine, {
    clean: required('clean'), corrupt: required('corrupt'), chatTemplate: a.flags.get('chat-template') === 'true',
    good: { text: required('good') }, bad: { text: required('bad') }, threshold,
  }, showProgress ? (p) => process.stderr.write(`\r${p.stage} (${p.done}/${p.total})\x1b[K`) : undefined);
  if (showProgress) process.stderr.write('\n');
  return reportJson(r);
}
