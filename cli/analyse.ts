/**
 * The runner's first three commands over Engine.analyse / Engine.generate: `margins` (logit-lens
 * margins), `sinks` (attention sinks) and `generate` (greedy or sampled, with margins per step).
 */
import type { Engine } from '../workers/engine/engine';
import type { Sae } from '../workers/engine/sae/sae';
import { type Args, numberFlag } from './args';
import { interventionsFromArgs } from './steering';

export const MARGINS_USAGE = `  branchpoint margins  --model DIR|ID --prompt TEXT --good TEXT --bad TEXT`;

export const SINKS_USAGE = `  branchpoint sinks    --model DIR|ID --prompt TEXT [--eps 0.3]`;

export const GENERATE_USAGE = `  branchpoint generate --model DIR|ID --prompt TEXT [--good TEXT --bad TEXT] [--max-new-tokens N]
                       [--temperature T --top-k K --seed S]
  (margins and generate also take --intervention JSON, repeatable: see Interventions below)`;

const rows = (flat: Float32Array, width: number): number[][] =>
  Array.from({ length: flat.length / width }, (_, r) => Array.from(flat.subarray(r * width, (r + 1) * width)));

/** `margins`: lens margins [n_layers+1][n_tokens], final and sequence margins, residual norms. */
export async function marginsCommand(engine: Engine, a: Args, prompt: string, required: (key: string) => string, loadSae: (ref: string) => Promise<Sae>): Promise<unknown> {
  const chatTemplate = a.flags.get('chat-template') === 'true';
  const interventions = await interventionsFromArgs(engine, a, { nPrompt: engine.encodePrompt({ prompt, chatTemplate }).length, chatTemplate }, loadSae);
  const r = await engine.analyse({ prompt, chatTemplate, good: { text: required('good') }, bad: { text: required('bad') }, interventions });
  return {
    ids: r.ids, tokens: r.tokens,
    good: r.good, bad: r.bad,
    lens_margin: rows(r.lensMargin, r.ids.length),
    final_margin: Array.from(r.finalMargin),
    sequence_margin: r.sequenceMargin,
    resid_norms: rows(r.residNorms, r.ids.length),
  };
}

/** `sinks`: α_0 per layer × head, sink rate, sink positions and value norms (ε = --eps). */
export async function sinksCommand(engine: Engine, a: Args, prompt: string): Promise<unknown> {
  const chatTemplate = a.flags.get('chat-template') === 'true';
  const eps = numberFlag(a, 'eps', 0.3, { min: 0, max: 1 });
  const r = await engine.analyse({ prompt, chatTemplate, good: { ids: [[0]] }, bad: { ids: [[0]] }, sinkEps: eps });
  return {
    ids: r.ids, tokens: r.tokens, eps,
    alpha0: rows(r.sinks.alpha0, r.nHeads),
    sink_rate: Array.from(r.sinks.sinkRate),
    sink_position: rows(Float32Array.from(r.sinks.sinkPos), r.nHeads),
    sink_value_norm: rows(r.sinks.sinkValueNorm, r.nHeads),
  };
}

/** `generate`: the new tokens and text, and margins per step when --good/--bad are given. */
export async function generateCommand(engine: Engine, a: Args, prompt: string, loadSae: (ref: string) => Promise<Sae>): Promise<unknown> {
  const chatTemplate = a.flags.get('chat-template') === 'true';
  const good = a.flags.get('good'), bad = a.flags.get('bad');
  const maxNewTokens = numberFlag(a, 'max-new-tokens', 32, { int: true, min: 1, max: 1 << 20 });
  const interventions = await interventionsFromArgs(engine, a, { nPrompt: engine.encodePrompt({ prompt, chatTemplate }).length, maxNewTokens, chatTemplate }, loadSae);
  const g = await engine.generate({
    prompt, chatTemplate, interventions,
    good: good ? { text: good } : { ids: [[0]] }, bad: bad ? { text: bad } : { ids: [[0]] },
    maxNewTokens,
    temperature: numberFlag(a, 'temperature', 0, { min: 0, max: 1e6 }),
    topK: numberFlag(a, 'top-k', 0, { int: true, min: 0 }),
    seed: numberFlag(a, 'seed', 0, { int: true, min: 0, max: 2 ** 32 - 1 }),
  });
  return { prompt_ids: g.promptIds, ids: g.ids, tokens: g.tokens, text: g.text, stop: g.stop, ...(good && bad ? { margins: g.margins } : {}) };
}
