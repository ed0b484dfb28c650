/**
 * The runner's first three commands over Engine.analyse / Engine.generate: `margins` (logit-lens
 * margins), `sinks` (attention sinks) and `generate` (greedy or sampled, with margins per step).
 */
import type { Engine } from '../workers/engine/engine';
import type { Sae } from '../workers/engine/sae/sae';
import { bool, type Values } from './flags';
import { sinkDivergence } from '../workers/engine/analysis/sinks';
import { BAD, CHAT_TEMPLATE, ENABLE_THINKING, EPS, GOOD, INTERVENTION, MAX_NEW_TOKENS, PROMPT, SEED, SYSTEM, TEMPERATURE, TOOLS, TOP_K } from './shared_flags';
import { chatTurn, checkChatTurn, futureOfFlag } from './chat_turn';
import { interventionsFromArgs } from './steering';
import { atDecisionPoint, runShapeOf } from '../workers/engine/studies/resolve_interventions';

const TOOL_FUTURE = ', or a tool call {"tool_call": {"name", "arguments"}} naming a tool of --tools';
export const MARGINS_FLAGS = {
  prompt: PROMPT, good: GOOD.required().describe(`the good future (alternatives separated by "|")${TOOL_FUTURE}`), bad: BAD.required().describe(`the bad future${TOOL_FUTURE}`),
  'chat-template': CHAT_TEMPLATE, system: SYSTEM, tools: TOOLS, 'enable-thinking': ENABLE_THINKING, intervention: INTERVENTION,
};
export const MARGINS_ABOUT = 'margins prints ids, tokens, lens_margin [n_layers+1][n_tokens], final_margin, sequence_margin, resid_norms.';

export const SINKS_FLAGS = {
  prompt: PROMPT, eps: EPS, 'chat-template': CHAT_TEMPLATE, intervention: INTERVENTION.describe('a steering intervention (see Interventions): the statistics are those of the steered run'),
  divergence: bool().default(false).describe('also the unsteered run and the sink divergence steered vs unsteered'),
};
export const SINKS_ABOUT = `sinks prints alpha0 [n_layers][n_heads] (attention on position 0), sink_rate, sink_position, sink_value_norm; with
--divergence true also alpha0_unsteered, sink_rate_unsteered (the same prompt without the interventions), sink_dalpha0
(α_0 steered − unsteered) and sink_js (Jensen–Shannon divergence in nats of each head's key distribution α/Σα):
[n_layers][n_heads], exactly 0 where the steering cannot reach (no interventions; layers before the steered hook).`;

export const GENERATE_FLAGS = {
  prompt: PROMPT, good: GOOD.describe(`the good future: with --bad, margins per step${TOOL_FUTURE}`), bad: BAD.describe(`the bad future${TOOL_FUTURE}`), 'max-new-tokens': MAX_NEW_TOKENS,
  temperature: TEMPERATURE, 'top-k': TOP_K, seed: SEED, 'chat-template': CHAT_TEMPLATE, system: SYSTEM, tools: TOOLS, 'enable-thinking': ENABLE_THINKING, intervention: INTERVENTION,
};
export const GENERATE_ABOUT = 'generate prints prompt_ids, ids, tokens, text, stop, and margins per step with --good and --bad.';

/** --good and --bad together or not at all. @throws Error otherwise. */
export function bothFutures(f: { good?: string; bad?: string }): void {
  if ((f.good === undefined) !== (f.bad === undefined)) throw new Error('give both --good and --bad (or neither)');
}

/** generate's flags together: both futures or neither, and the chat turn (chat_turn.ts checkChatTurn). @throws Error otherwise. */
export function checkGenerate(f: Values<typeof GENERATE_FLAGS>): void {
  bothFutures(f);
  checkChatTurn(f);
}

const rows = (flat: Float32Array, width: number): number[][] =>
  Array.from({ length: flat.length / width }, (_, r) => Array.from(flat.subarray(r * width, (r + 1) * width)));

/** `margins`: lens margins [n_layers+1][n_tokens], final and sequence margins, residual norms. */
export async function marginsCommand(engine: Engine, f: Values<typeof MARGINS_FLAGS>, loadSae: (ref: string) => Promise<Sae>): Promise<unknown> {
  const turn = chatTurn(f);
  const good = futureOfFlag(f.good, 'good'), bad = futureOfFlag(f.bad, 'bad');
  // positions resolve against the run the analysis makes: the prompt at its decision point
  const interventions = await interventionsFromArgs(engine, f.intervention, runShapeOf(engine, atDecisionPoint(engine, turn, good, bad)), loadSae);
  const r = await engine.analyse({ ...turn, good, bad, interventions });
  return {
    ids: r.ids, tokens: r.tokens,
    good: r.good, bad: r.bad,
    lens_margin: rows(r.lensMargin, r.ids.length),
    final_margin: Array.from(r.finalMargin),
    sequence_margin: r.sequenceMargin,
    resid_norms: rows(r.residNorms, r.ids.length),
  };
}

/**
 * `sinks`: α_0 per layer × head, sink rate, sink positions and value norms (ε = --eps), of the run steered by --intervention when given;
 * with --divergence the unsteered run too and the sink divergence between them (analysis/sinks.ts sinkDivergence, unsteered → steered).
 */
export async function sinksCommand(engine: Engine, f: Values<typeof SINKS_FLAGS>, loadSae: (ref: string) => Promise<Sae>): Promise<unknown> {
  const { prompt, 'chat-template': chatTemplate, eps } = f;
  const interventions = await interventionsFromArgs(engine, f.intervention, runShapeOf(engine, { prompt, chatTemplate }), loadSae);
  const req = { prompt, chatTemplate, good: { ids: [[0]] }, bad: { ids: [[0]] }, sinkEps: eps };
  const r = await engine.analyse({ ...req, interventions });
  const out = {
    ids: r.ids, tokens: r.tokens, eps,
    alpha0: rows(r.sinks.alpha0, r.nHeads),
    sink_rate: Array.from(r.sinks.sinkRate),
    sink_position: rows(Float32Array.from(r.sinks.sinkPos), r.nHeads),
    sink_value_norm: rows(r.sinks.sinkValueNorm, r.nHeads),
  };
  if (!f.divergence) return out;
  const u = interventions.length ? await engine.analyse(req) : r;
  const d = sinkDivergence(u.sinks, r.sinks, r.ids.length);
  return {
    ...out, alpha0_unsteered: rows(u.sinks.alpha0, r.nHeads), sink_rate_unsteered: Array.from(u.sinks.sinkRate),
    sink_dalpha0: rows(d.dAlpha0, r.nHeads), sink_js: rows(d.js, r.nHeads),
  };
}

/** `generate`: the new tokens and text, and margins per step when --good/--bad are given. */
export async function generateCommand(engine: Engine, f: Values<typeof GENERATE_FLAGS>, loadSae: (ref: string) => Promise<Sae>): Promise<unknown> {
  const { good, bad, 'max-new-tokens': maxNewTokens } = f;
  const turn = chatTurn(f);
  const interventions = await interventionsFromArgs(engine, f.intervention, runShapeOf(engine, turn, maxNewTokens), loadSae);
  const g = await engine.generate({
    ...turn, interventions,
    good: good ? futureOfFlag(good, 'good') : { ids: [[0]] }, bad: bad ? futureOfFlag(bad, 'bad') : { ids: [[0]] },
    maxNewTokens,
    temperature: f.temperature, topK: f['top-k'], seed: f.seed,
  });
  return { prompt_ids: g.promptIds, ids: g.ids, tokens: g.tokens, text: g.text, stop: g.stop, ...(good && bad ? { margins: g.margins } : {}) };
}
