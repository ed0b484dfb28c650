/**
 * The runner's gradient attribution: `branchpoint attribute` (token attribution of the margin by
 * gradient × input or integrated gradients, workers/engine/studies/integrated_gradients.ts) and
 * `branchpoint patch --method atp` (the attribution-patching grid of workers/engine/studies/atp.ts:
 * the linear estimate of every patch from two forwards and one backward, with the exact grid, their
 * Spearman correlation and the disagreeing cells under --compare-exact).
 */
import type { Engine } from '../workers/engine/engine';
import { attributionPatching } from '../workers/engine/studies/atp';
import { tokenAttribution, type AttributionMethod } from '../workers/engine/studies/integrated_gradients';
import { gridRows } from '../workers/engine/studies/report_json';
import { int, oneOf, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, GOOD, PROGRESS, PROMPT } from './shared_flags';
import type { PatchFlags } from './patching';

export const ATTRIBUTE_FLAGS = {
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(),
  method: oneOf<AttributionMethod>(['grad_x_input', 'ig']).required().describe('gradient × input, or integrated gradients over the input embeddings'),
  corrupt: text().describe('ig: the baseline is this prompt\'s embeddings (as many tokens as --prompt; default: zero embeddings)'),
  'baseline-token': int({ min: 0 }).describe('ig: the baseline is this token id\'s embedding at every position (BOS kept)'),
  steps: int({ min: 1, max: 4096 }).default(64).describe('ig: Riemann steps'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
};
export type AttributeFlags = Values<typeof ATTRIBUTE_FLAGS>;

export const ATTRIBUTE_ABOUT = `attribute prints {method, margin, tokens, attribution: [n_tokens]} and for ig baseline, baseline_margin,
steps and completeness_gap = Σ attribution − (Δ(x) − Δ(baseline)), the method's own check.`;

/** Flag combinations: --corrupt and --baseline-token are IG baselines, one at a time. */
export function checkAttribute(f: AttributeFlags, g: { given: (n: string) => boolean }): void {
  if (f.method !== 'ig' && (g.given('corrupt') || g.given('baseline-token') || g.given('steps'))) throw new Error(`--corrupt, --baseline-token and --steps are for --method ig, not ${f.method}`);
  if (g.given('corrupt') && g.given('baseline-token')) throw new Error('--corrupt and --baseline-token are two baselines: give one');
}

/** `branchpoint attribute`: one number per token. */
export async function attributeCommand(engine: Engine, f: AttributeFlags): Promise<unknown> {
  const r = await tokenAttribution(engine, {
    prompt: f.prompt, chatTemplate: f['chat-template'], good: { text: f.good }, bad: { text: f.bad },
    method: f.method, corrupt: f.corrupt, baselineToken: f['baseline-token'], steps: f.steps,
  }, f.progress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (f.progress && f.method === 'ig') process.stderr.write('\n');
  return {
    method: r.method, margin: r.margin, tokens: r.tokens, attribution: Array.from(r.attribution),
    ...(r.method === 'ig' ? { baseline: r.baseline, baseline_margin: r.baselineMargin, steps: r.steps, completeness_gap: r.completenessGap } : {}),
  };
}

/** `branchpoint patch --method atp`. */
export async function atpCommand(engine: Engine, f: PatchFlags): Promise<unknown> {
  const r = await attributionPatching(engine, {
    clean: f.clean, corrupt: f.corrupt, chatTemplate: f['chat-template'], good: { text: f.good }, bad: { text: f.bad },
    hook: f.hook, direction: f.direction, compareExact: f['compare-exact'], threshold: f.threshold,
  }, f.progress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (f.progress) process.stderr.write('\n');
  return {
    hook: r.hookTemplate, method: 'atp', direction: r.direction, columns: r.columns, clean_tokens: r.cleanTokens,
    clean_margin: r.cleanMargin, corrupt_margin: r.corruptMargin,
    atp: gridRows(r.atp, r.nCols), atp_nats: gridRows(r.atpNats, r.nCols),
    ...(r.recovery ? { recovery: gridRows(r.recovery, r.nCols), rank_correlation: r.rankCorrelation, threshold: r.threshold, disagreements: r.disagreements } : {}),
  };
}
