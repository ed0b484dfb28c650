/**
 * The runner's `report` subcommand: the decision-point report of workers/engine/studies/report.ts
 * (visible / causal / changeable on one layer and step axis) as one JSON object — the numbers the
 * Report view shows.
 */
import { Engine } from '../workers/engine/engine';
import { decisionReport } from '../workers/engine/studies/report';
import { decisionReportPair, type ReportPairRequest } from '../workers/engine/studies/report_pair';
import { reportJson, reportPairJson } from '../workers/engine/studies/report_json';
import { MODEL_B, openModelB } from './compare';
import { cpuBackendFromArgs } from './threads';
import type { COMMON_FLAGS } from './shared_flags';
import { num, type Values } from './flags';
import { CLEAN, CORRUPT } from './patching';
import { checkFolds, POSITION, readLabelledSet } from './probe';
import { BAD, CHAT_TEMPLATE, ENABLE_THINKING, FOLDS, GOOD, INTERVENTION, K_MAX, PROBE_SEED, PROGRESS, SET, SYSTEM, TOOLS } from './shared_flags';
import { chatTurn, checkChatTurn, futureOfFlag } from './chat_turn';
import { interventionsFromArgs } from './steering';
import { runShapeOf } from '../workers/engine/studies/resolve_interventions';
import { checkWindowFlags, SCORE } from './window';
import { MAX_NEW_TOKENS } from './shared_flags';

export const REPORT_FLAGS = {
  clean: CLEAN, corrupt: CORRUPT,
  good: GOOD.required().describe('the good future (alternatives separated by "|"), or a tool call {"tool_call": {"name", "arguments"}} naming a tool of --tools'),
  bad: BAD.required().describe('the bad future, or a tool call as --good'),
  threshold: num({ min: 0 }).describe('|Δ| in nats for the visible layer (default 0.1)'),
  intervention: INTERVENTION.describe('the changeable panel: switched on from step k (needs --max-new-tokens; see Interventions)'),
  'max-new-tokens': MAX_NEW_TOKENS.optional().describe('the changeable panel\'s generation length (with --intervention)'),
  'k-max': K_MAX, score: SCORE,
  set: SET.describe('a labelled set as in probe (adds the probe and the intervals)'), position: POSITION, folds: FOLDS, seed: PROBE_SEED,
  'model-b': MODEL_B.describe('model B: the same report on it beside --model\'s, and B − A of its answers (a folder or a Hub id; same number of layers)'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
  system: SYSTEM.describe('with --chat-template true: the system prompt of the clean and corrupted prompts (and the set\'s)'),
  tools: TOOLS, 'enable-thinking': ENABLE_THINKING,
};
export type ReportFlags = Values<typeof REPORT_FLAGS>;

/** The changeable panel's flags together (--intervention with --max-new-tokens, --k-max/--score inside N), the set's --folds. @throws Error otherwise. */
export function checkReport(f: ReportFlags): void {
  checkChatTurn(f);
  if (f.intervention.length) {
    if (f['max-new-tokens'] === undefined) throw new Error('--max-new-tokens is required with --intervention: the changeable panel\'s generation length');
    checkWindowFlags({ ...f, 'max-new-tokens': f['max-new-tokens'] });
  } else {
    if (f['max-new-tokens'] !== undefined) throw new Error('--max-new-tokens without --intervention: the changeable panel needs the intervention switched on from step k (JSON, repeatable)');
    if (f['k-max'] !== undefined || f.score !== undefined) throw new Error(`--${f['k-max'] !== undefined ? 'k-max' : 'score'} without --intervention: it sets the changeable panel, which needs the intervention`);
  }
  if (f.set === undefined) {
    const stray = (['position', 'folds', 'seed'] as const).find((k) => f[k] !== undefined);
    if (stray) throw new Error(`--${stray} without --set: it sets the probe on the labelled set`);
  } else {
    checkFolds(f.folds, readLabelledSet(f.set));
  }
}

export const REPORT_ABOUT = `report prints {visible_layer, visible_token, first_layer_95, causal_layer (from block 1: row 0, the embeddings, is the
clean token itself where the prompts differ: causal_trivial_positions, _recovery), causal_positions, point_of_no_return,
label, lens_margin: [n_layers+1] (toward the final answer), max_recovery: [n_layers], probe_accuracy: [n_layers+1],
window_ks, window_outcome: [K+1], intervals and bands (with --set), patch: {… the patch command's resid_pre grid}};
layers are residual rows (0 = embeddings, l = entering block l). --intervention/--score as in window (the
changeable panel); --set is a labelled set as in probe: the probe runs on it, and every prompt of it joins
the intervals, patched against the other class's prompt at the same index (pairs of unequal length: lens only).
With --model-b: {label_a, label_b, a: {… the keys above for --model}, b: {… for model B}, difference: {visible_layer,
causal_layer, point_of_no_return: {a, b, value (b − a, in layers or steps), interval (paired percentile bootstrap over
the prompts with --set: the same prompts drawn for A and B), defined (fraction of resamples where both are defined), n_paired}}}.`;

/**
 * `branchpoint report`: the decision-point report as JSON; with --model-b the report on both models
 * and B − A (studies/report_pair.ts), model B loaded on its own CPU backend. Progress goes to stderr
 * with --progress true.
 */
export async function reportCommand(engine: Engine, f: ReportFlags & Values<typeof COMMON_FLAGS>): Promise<unknown> {
  checkReport(f);
  const threshold = f.threshold;
  const chatTemplate = f['chat-template'];
  const N = f['max-new-tokens'];
  const window: ReportPairRequest['window'] = f.intervention.length && N !== undefined ? {
    maxNewTokens: N, kMax: f['k-max'], score: f.score,
    interventions: (e, p) => interventionsFromArgs(e, f.intervention, runShapeOf(e, p, N)),
  } : undefined;
  let labelled;
  if (f.set !== undefined) {
    const set = readLabelledSet(f.set);
    labelled = { ...set, position: f.position ?? set.position };
  }
  const showProgress = f.progress;
  const { system, tools, enableThinking } = chatTurn({ ...f, prompt: f.clean });
  const req = {
    clean: f.clean, corrupt: f.corrupt, chatTemplate, ...(system !== undefined ? { system } : {}), ...(tools ? { tools } : {}), ...(enableThinking !== undefined ? { enableThinking } : {}),
    good: futureOfFlag(f.good, 'good'), bad: futureOfFlag(f.bad, 'bad'), threshold, labelled,
    probe: { folds: f.folds, seed: f.seed },
  };
  const progress = showProgress ? (p: { stage: string; done: number; total: number }) => process.stderr.write(`\r${p.stage} (${p.done}/${p.total})\x1b[K`) : undefined;
  let out: Record<string, unknown>;
  if (f['model-b'] !== undefined) {
    const b = await Engine.load(openModelB(f['model-b'], f.endpoint), await cpuBackendFromArgs(f.threads), undefined, { weightDtype: f.weights });
    try {
      out = reportPairJson(await decisionReportPair(engine, b, { ...req, window }, progress));
    } finally {
      b.dispose();
    }
  } else {
    out = reportJson(await decisionReport(engine, { ...req, window: window && { ...window, interventions: (p) => window.interventions(engine, p) } }, progress));
  }
  if (showProgress) process.stderr.write('\n');
  return out;
}
