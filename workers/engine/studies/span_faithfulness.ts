/**
 * Span faithfulness of the attribution methods, over one prompt or a prompt set (DESIGN.md §3
 * "Attribution": every map arrives with its own evidence). For each prompt and each method —
 * the flow attribution (flow.ts), gradient × input and integrated gradients (integrated_gradients.ts)
 * — every span gets one number (the sum of its tokens' attribution), the spans are ranked by it,
 * largest first, and the deletion / insertion curves are measured over spans (faithfulness.ts with
 * groups; Petsiuk et al. 2018, arXiv 1806.07421):
 *   deletion(k):  the tokens of the top k spans replaced by the baseline token, Δ re-measured;
 *   insertion(k): the tokens of every span replaced, then those of the top k restored;
 * k = 0 … n_spans, one forward each; Δ is read at the prompt's decision point (Engine.decisionPoint: the
 * futures' shared prefix teacher-forced after it, kept in every run), where the attributions read it. IG's baseline is the same token's embedding at every position
 * (BOS kept), so deletion and IG remove a span the same way.
 *
 * Over a set (every prompt naming the same span labels, in the same order), each number — a span's
 * value, each point of each curve, the curves' areas (mean Δ over the points) — is given as the mean
 * over prompts with a percentile bootstrap interval (analysis/bootstrap.ts bootstrapMean, the
 * decision-point report's intervals; seeded, so the UI and the runner agree).
 */
import type { ChatTurn } from '../prompt';
import { promptWith } from '../prompt';
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import { bootstrapMean, type BootstrapOptions, type MeanInterval } from '../analysis/bootstrap';
import { checkSpans, flowAttribution, type TokenSpan } from './flow';
import { tokenAttribution } from './integrated_gradients';
import { faithfulnessCurves } from './faithfulness';
import type { Progress } from '../progress';

export type SpanMethod = 'flow' | 'grad_x_input' | 'ig';
export const SPAN_METHODS: readonly SpanMethod[] = ['flow', 'grad_x_input', 'ig'];

/** A span by token positions [start, end), or by its text: the first run of whole tokens that spells it. */
export type SpanRef = TokenSpan | { label: string; text: string };

/** One prompt of the set; good / bad default to the request's. */
export interface SpanSetRow {
  prompt: string;
  good?: string;
  bad?: string;
  spans: SpanRef[];
}

export interface SpanFaithfulnessRequest extends ChatTurn {
  rows: SpanSetRow[];
  /** The futures of the rows that name none. */
  good?: string;
  bad?: string;
  methods: SpanMethod[];
  /** The token deleted spans are replaced by (default the BOS id, else 0); IG's baseline too. */
  baselineId?: number;
  /** IG's Riemann steps (default 32). */
  igSteps?: number;
  bootstrap?: BootstrapOptions;
}

/** One method on one prompt. */
export interface SpanMethodRow {
  method: SpanMethod;
  /** One number per span (nats of Δ), in the request's span order. */
  values: number[];
  /** Span indices, largest value first. */
  order: number[];
  /** Δ with the top k spans deleted / with only the top k present, k = 0 … n_spans. */
  deletion: number[];
  insertion: number[];
  deletionArea: number;
  insertionArea: number;
}

export interface SpanPromptResult {
  prompt: string;
  tokens: string[];
  /** Δ on the prompt as it is (nats), at its decision point. */
  margin: number;
  spans: TokenSpan[];
  methods: SpanMethodRow[];
  /** The futures' shared prefix teacher-forced after the prompt (tokens and the curves' runs include it), or null. */
  sharedPrefix: SharedPrefix | null;
}

/** One method over the set: means with bootstrap intervals. */
export interface SpanMethodSummary {
  method: SpanMethod;
  values: MeanInterval[];
  deletion: MeanInterval[];
  insertion: MeanInterval[];
  deletionArea: MeanInterval;
  insertionArea: MeanInterval;
}

export interface SpanFaithfulnessResult {
  labels: string[];
  baselineId: number;
  k: number[];
  prompts: SpanPromptResult[];
  summary: SpanMethodSummary[];
}

/**
 * Resolves a span reference against the prompt's token strings.
 * @throws Error naming the span when its range is outside the prompt or its text is no run of whole tokens.
 */
export function resolveSpan(ref: SpanRef, tokens: readonly string[], where: string): TokenSpan {
  if ('text' in ref) {
    for (let s = 0; s < tokens.length; s++) {
      let acc = '';
      for (let e = s; e < tokens.length && acc.length < ref.text.length; e++) {
        acc += tokens[e];
        if (acc === ref.text) return { label: ref.label, start: s, end: e + 1 };
      }
    }
    throw new Error(`${where}: span "${ref.label}" — the text ${JSON.stringify(ref.text)} is not a run of whole tokens of the prompt (its tokens: ${tokens.map((t) => JSON.stringify(t)).join(' ')}); give it as token positions {"start", "end"} instead`);
  }
  try {
    checkSpans([ref], tokens.length);
  } catch (e) {
    throw new Error(`${where}: ${(e as Error).message}`);
  }
  return ref;
}

/**
 * The spans' values and deletion / insertion curves per method for every prompt, with bootstrap
 * intervals over the prompts (see the module comment). Every row is tokenised and its spans resolved
 * before any forward runs.
 * @param onProgress after each (prompt, method).
 * @throws Error for no rows or methods, an unknown method, a row without futures, rows whose span
 *   labels differ, a span that does not resolve, or a baseline outside the vocabulary.
 */
export async function spanFaithfulness(engine: Engine, req: SpanFaithfulnessRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<SpanFaithfulnessResult> {
  if (req.rows.length === 0) throw new Error('span faithfulness: the prompt set is empty');
  if (req.methods.length === 0) throw new Error(`span faithfulness: choose at least one method (${SPAN_METHODS.join(', ')})`);
  for (const m of req.methods) if (!SPAN_METHODS.includes(m)) throw new Error(`attribution method "${m}": use ${SPAN_METHODS.join(', ')}`);
  const V = engine.spec.dVocab;
  const baselineId = req.baselineId ?? engine.spec.bosTokenId ?? 0;
  if (!(Number.isInteger(baselineId) && baselineId >= 0 && baselineId < V)) throw new Error(`baseline token ${baselineId} is outside the vocabulary (0..${V - 1})`);
  // resolve everything first: futures, tokens, spans, and one list of labels
  const rows = req.rows.map((row, i) => {
    const where = req.rows.length > 1 ? `prompt ${i + 1} of the set` : 'the prompt';
    const good = row.good ?? req.good, bad = row.bad ?? req.bad;
    if (good === undefined || bad === undefined) throw new Error(`${where}: no ${good === undefined ? 'good' : 'bad'} future (give it in the row or for the whole set)`);
    // at the futures' decision point (Engine.decisionPoint), as flow and the gradient methods read it
    const d = engine.decisionPoint(promptWith(row.prompt, req), { text: good }, { text: bad });
    const ids = d.promptIds, tokens = engine.tokenStrings(ids);
    if (row.spans.length === 0) throw new Error(`${where}: no spans to rank (give at least one)`);
    return { row, where, good, bad, d, ids, tokens, spans: row.spans.map((s) => resolveSpan(s, tokens, where)) };
  });
  const labels = rows[0].spans.map((s) => s.label);
  for (const r of rows) {
    const got = r.spans.map((s) => s.label);
    if (got.join('\u0000') !== labels.join('\u0000')) throw new Error(`${r.where}: spans ${JSON.stringify(got)}, but the set's first prompt has ${JSON.stringify(labels)}: every prompt needs the same span labels in the same order, so the curves line up`);
  }
  const total = rows.length * req.methods.length;
  let done = 0;
  const prompts: SpanPromptResult[] = [];
  for (const r of rows) {
    const base = { ...promptWith(r.row.prompt, req), good: { text: r.good }, bad: { text: r.bad } };
    const methods: SpanMethodRow[] = [];
    let margin = NaN;
    for (const method of req.methods) {
      signal?.throwIfAborted();
      let attribution: ArrayLike<number>;
      if (method === 'flow') {
        const f = await flowAttribution(engine, { ...base, faithfulness: false }, signal);
        attribution = f.attribution; margin = f.margin;
      } else {
        const a = await tokenAttribution(engine, { ...base, method, ...(method === 'ig' ? { baselineToken: baselineId, steps: req.igSteps ?? 32 } : {}) }, undefined, signal);
        attribution = a.attribution; margin = a.margin;
      }
      const values = r.spans.map((s) => { let v = 0; for (let t = s.start; t < s.end; t++) v += attribution[t]; return v; });
      const c = await faithfulnessCurves(engine, {
        ids: r.ids, attribution: values, groups: r.spans.map((s) => Array.from({ length: s.end - s.start }, (_, j) => s.start + j)),
        good: r.d.good.firstIds, bad: r.d.bad.firstIds,
        baselineId, steps: r.spans.length,
      }, signal);
      methods.push({ method, values, order: c.order, deletion: c.deletion, insertion: c.insertion, deletionArea: c.deletionArea, insertionArea: c.insertionArea });
      onProgress?.({ done: ++done, total });
    }
    prompts.push({ prompt: r.row.prompt, tokens: r.tokens, margin, spans: r.spans, methods, sharedPrefix: r.d.sharedPrefix });
  }
  const opts = req.bootstrap ?? {};
  const at = (i: number) => ({ ...opts, seed: (opts.seed ?? 0) + i });
  const summary = req.methods.map((method, mi): SpanMethodSummary => {
    const rowsOf = prompts.map((p) => p.methods[mi]);
    const per = (f: (m: SpanMethodRow) => number[], n: number) => Array.from({ length: n }, (_, j) => bootstrapMean(rowsOf.map((m) => f(m)[j]), at(j)));
    return {
      method,
      values: per((m) => m.values, labels.length),
      deletion: per((m) => m.deletion, labels.length + 1),
      insertion: per((m) => m.insertion, labels.length + 1),
      deletionArea: bootstrapMean(rowsOf.map((m) => m.deletionArea), opts),
      insertionArea: bootstrapMean(rowsOf.map((m) => m.insertionArea), opts),
    };
  });
  return { labels, baselineId, k: Array.from({ length: labels.length + 1 }, (_, i) => i), prompts, summary };
}
