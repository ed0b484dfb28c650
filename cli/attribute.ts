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
import { spanFaithfulness, SPAN_METHODS, type SpanFaithfulnessResult, type SpanMethod, type SpanSetRow } from '../workers/engine/studies/span_faithfulness';
import { parseSpanSet } from '../workers/engine/io/span_set';
import { custom, int, oneOf, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, ENABLE_THINKING, GOOD, PROGRESS, SYSTEM, TOOLS } from './shared_flags';
import { checkChatTurn, turnFlags, turnOfFlags } from './chat_turn';
import { parseSpans } from './attribution_fwd';
import * as fs from 'node:fs';
import type { PatchFlags } from './patching';

/** Parses --methods: a comma list of span_faithfulness.ts methods. */
function parseMethods(s: string): SpanMethod[] {
  const ms = s.split(',').map((x) => x.trim());
  for (const m of ms) if (!SPAN_METHODS.includes(m as SpanMethod)) throw new Error(`unknown method "${m}"`);
  return ms as SpanMethod[];
}

export const ATTRIBUTE_FLAGS = {
  prompt: text().describe('the prompt (or --set)'),
  good: GOOD.required(), bad: BAD.required(),
  method: oneOf<AttributionMethod>(['grad_x_input', 'ig']).describe('gradient × input, or integrated gradients over the input embeddings (one prompt; required without --set)'),
  spans: custom(parseSpans, 'a JSON array of {"label","start","end"} token ranges', 'JSON', '[{"label":"evidence","start":3,"end":5}]').describe('one prompt: token spans [start, end), each given one number and ranked for the span deletion / insertion curves'),
  set: text('FILE', { nonEmpty: true }).describe('a span prompt set (.json array or .jsonl of {"prompt", "spans", "good"?, "bad"?}; docs/runner.md): span values and curves per method, with bootstrap intervals over the prompts'),
  methods: custom(parseMethods, `a comma list of ${SPAN_METHODS.join(', ')}`, 'M,M…', 'flow,grad_x_input').describe('--set: the methods compared (default flow,grad_x_input)'),
  baseline: int({ min: 0 }).describe('--spans / --set: the token deleted spans are replaced by, and IG\'s baseline there (default BOS, else 0)'),
  corrupt: text().describe('ig: the baseline is this prompt\'s embeddings (as many tokens as --prompt; default: zero embeddings)'),
  'baseline-token': int({ min: 0 }).describe('ig: the baseline is this token id\'s embedding at every position (BOS kept)'),
  steps: int({ min: 1, max: 4096 }).default(64).describe('ig: Riemann steps'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
  system: SYSTEM.describe('with --chat-template true: the system prompt before the user turn (of every prompt with --set)'), tools: TOOLS, 'enable-thinking': ENABLE_THINKING,
};
export type AttributeFlags = Values<typeof ATTRIBUTE_FLAGS>;

export const ATTRIBUTE_ABOUT = `attribute prints {method, margin, tokens, attribution: [n_tokens]} and for ig baseline, baseline_margin,
steps and completeness_gap = Σ attribution − (Δ(x) − Δ(baseline)), the method's own check. With --spans also
span_values [n_spans] and span_deletion / span_insertion [n_spans+1] (the top-k spans by value replaced by --baseline,
or only they kept; Δ re-measured). With --set FILE (instead of --prompt and --method): {labels, k, baseline, summary:
[{method, values, deletion, insertion, deletion_area, insertion_area}], prompts: [{prompt, margin, spans, methods}]},
every summary number {n, mean, lo, hi}: the mean over the set's prompts with a 95 % percentile bootstrap interval
(2000 resamples, seed 0). A set file is a JSON array (or JSONL) of {"prompt", "spans": [{"label","start","end"} or
{"label","text"}], "good"?, "bad"?}; a text span is the first run of whole tokens that spells it; every prompt names
the same span labels in the same order.`;

/** The set file, read and parsed. @throws Error naming the flag for a missing or malformed file. */
function readSpanSet(file: string): SpanSetRow[] {
  if (!fs.existsSync(file)) throw new Error(`--set ${file}: no such file`);
  return parseSpanSet(file, fs.readFileSync(file, 'utf8'));
}

/**
 * Flag combinations: --prompt with --method, or --set (and --methods) alone; --corrupt and
 * --baseline-token are IG baselines, one at a time; the chat turn's flags (chat_turn.ts
 * checkChatTurn; the futures are text here); the set file is read and checked here.
 */
export function checkAttribute(f: AttributeFlags, g: { given: (n: string) => boolean }): void {
  checkChatTurn(turnFlags(f));
  if (f.set !== undefined) {
    const stray = ['prompt', 'method', 'spans', 'corrupt', 'baseline-token'].find((n) => g.given(n));
    if (stray) throw new Error(`--${stray} is for one prompt; with --set the prompts and spans come from the file (and the methods from --methods)`);
    readSpanSet(f.set);
    return;
  }
  if (f.prompt === undefined || f.method === undefined) throw new Error('give --prompt and --method (one prompt), or --set FILE (a prompt set)');
  if (g.given('methods')) throw new Error('--methods is for --set; one prompt takes --method');
  if (g.given('spans') && (g.given('corrupt') || g.given('baseline-token'))) throw new Error('--spans ranks spans with IG over the --baseline token (the deletion\'s replacement), so it takes no --corrupt or --baseline-token');
  if (g.given('baseline') && !g.given('spans')) throw new Error('--baseline is the span deletion\'s replacement token: give --spans (or --set)');
  if (f.method !== 'ig' && (g.given('corrupt') || g.given('baseline-token') || g.given('steps'))) throw new Error(`--corrupt, --baseline-token and --steps are for --method ig, not ${f.method}`);
  if (g.given('corrupt') && g.given('baseline-token')) throw new Error('--corrupt and --baseline-token are two baselines: give one');
}

/** The span study's result as the runner prints it (snake_case keys). */
function spanJson(r: SpanFaithfulnessResult): unknown {
  return {
    labels: r.labels, k: r.k, baseline: r.baselineId,
    summary: r.summary.map((s) => ({ method: s.method, values: s.values, deletion: s.deletion, insertion: s.insertion, deletion_area: s.deletionArea, insertion_area: s.insertionArea })),
    prompts: r.prompts.map((p) => ({ prompt: p.prompt, margin: p.margin, spans: p.spans, methods: p.methods.map((m) => ({ method: m.method, values: m.values, order: m.order, deletion: m.deletion, insertion: m.insertion })) })),
  };
}

/** `branchpoint attribute`: one number per token (and per span), or a prompt set's span numbers with intervals. */
export async function attributeCommand(engine: Engine, f: AttributeFlags): Promise<unknown> {
  const progress = f.progress ? (p: { done: number; total: number }) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined;
  if (f.set !== undefined) {
    const r = await spanFaithfulness(engine, { rows: readSpanSet(f.set), good: f.good, bad: f.bad, ...turnOfFlags(f), methods: f.methods ?? ['flow', 'grad_x_input'], baselineId: f.baseline, igSteps: f.steps }, progress);
    if (f.progress) process.stderr.write('\n');
    return spanJson(r);
  }
  const prompt = f.prompt!, method = f.method!;
  const span = f.spans && (await spanFaithfulness(engine, { rows: [{ prompt, spans: f.spans }], good: f.good, bad: f.bad, ...turnOfFlags(f), methods: [method], baselineId: f.baseline, igSteps: f.steps })).prompts[0].methods[0];
  const r = await tokenAttribution(engine, {
    prompt, ...turnOfFlags(f), good: { text: f.good }, bad: { text: f.bad },
    method, corrupt: f.corrupt, baselineToken: f['baseline-token'], steps: f.steps,
  }, progress);
  if (f.progress && f.method === 'ig') process.stderr.write('\n');
  return {
    method: r.method, margin: r.margin, tokens: r.tokens, attribution: Array.from(r.attribution),
    ...(r.method === 'ig' ? { baseline: r.baseline, baseline_margin: r.baselineMargin, steps: r.steps, completeness_gap: r.completenessGap } : {}),
    ...(span ? { span_values: span.values, span_order: span.order, span_deletion: span.deletion, span_insertion: span.insertion } : {}),
  };
}

/** `branchpoint patch --method atp`. */
export async function atpCommand(engine: Engine, f: PatchFlags): Promise<unknown> {
  const r = await attributionPatching(engine, {
    clean: f.clean, corrupt: f.corrupt, chatTemplate: f['chat-template'], good: { text: f.good }, bad: { text: f.bad },
    hook: f.hook, direction: f.direction, compareExact: f['compare-exact'], threshold: f.threshold, ...(f['atp-star'] ? { correction: 'qk' as const } : {}),
  }, f.progress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (f.progress) process.stderr.write('\n');
  return {
    hook: r.hookTemplate, method: 'atp', ...(r.correction ? { correction: r.correction } : {}), direction: r.direction, columns: r.columns, clean_tokens: r.cleanTokens,
    clean_margin: r.cleanMargin, corrupt_margin: r.corruptMargin,
    atp: gridRows(r.atp, r.nCols), atp_nats: gridRows(r.atpNats, r.nCols),
    ...(r.recovery ? { recovery: gridRows(r.recovery, r.nCols), rank_correlation: r.rankCorrelation, threshold: r.threshold, disagreements: r.disagreements } : {}),
  };
}
