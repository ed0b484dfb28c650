/**
 * The runner's forward-only attributions of the margin: `dla` (direct logit attribution,
 * workers/engine/studies/dla.ts) and `flow` (the flow attribution to tokens and spans with
 * deletion / insertion curves, studies/flow.ts), each one row of the studies' table run here.
 */
import { custom, int, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, ENABLE_THINKING, GOOD, PROMPT, SYSTEM, TOOLS } from './shared_flags';
import { chatTurn, futureOfFlag } from './chat_turn';
import { STUDIES, type StudyContext } from '../workers/engine/studies/registry';
import type { TokenSpan } from '../workers/engine/studies/flow';

export const DLA_FLAGS = {
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(), 'chat-template': CHAT_TEMPLATE, system: SYSTEM, tools: TOOLS, 'enable-thinking': ENABLE_THINKING,
  position: int().describe('the position whose next-token margin is decomposed (default the last; negative counts from the end)'),
};
export const DLA_ABOUT = `dla prints {components: {embed, pos_embed, attn [n_layers], mlp [n_layers], final_bias}, heads [n_layers][n_heads],
attn_bias [n_layers], frozen_margin, margin, entropy_gap, remainder, tokens, position}: the margin's direct logit attribution with
the final norm FROZEN at its scale on the run (a linear approximation); the components sum to frozen_margin exactly, and
margin = frozen_margin + entropy_gap (token sets) + remainder (float32 rounding).`;

/** Parses --spans: a JSON array of {label?, start, end} token ranges [start, end). */
export function parseSpans(s: string): TokenSpan[] {
  const v: unknown = JSON.parse(s);
  if (!Array.isArray(v)) throw new Error('not an array');
  return v.map((x: { label?: unknown; start?: unknown; end?: unknown }, i) => {
    if (typeof x !== 'object' || x === null || typeof x.start !== 'number' || typeof x.end !== 'number') throw new Error(`span ${i} needs numbers start and end`);
    return { label: typeof x.label === 'string' ? x.label : `${x.start}–${x.end}`, start: x.start, end: x.end };
  });
}

export const FLOW_FLAGS = {
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(), 'chat-template': CHAT_TEMPLATE, system: SYSTEM, tools: TOOLS, 'enable-thinking': ENABLE_THINKING,
  spans: custom(parseSpans, 'a JSON array of {"label","start","end"} token ranges', 'JSON', '[{"label":"evidence","start":3,"end":5}]').describe('token spans [start, end) to sum the attribution over'),
  generated: int({ min: 0, max: 256 }).default(0).describe('generate N tokens greedily first and hand their credit back to the prompt'),
  baseline: int({ min: 0 }).describe('the token id deleted tokens are replaced by (default BOS, else 0)'),
};
export const FLOW_ABOUT = `flow prints {attribution [n_tokens], spans [{label,start,end,value}], deletion, insertion, k, bias, frozen_margin, margin,
direct [n_tokens+N], heads [n_layers][n_heads], hops, tokens}: value-weighted attention A·(v W_O) projected on the margin
direction (frozen norms and patterns; MLP at its position), recursive through --generated tokens; deletion/insertion:
the top-attributed tokens replaced by --baseline, Δ re-measured (k tokens each).`;

const grid = (flat: ArrayLike<number>, width: number): number[][] => Array.from({ length: flat.length / width }, (_, r) => Array.from(flat).slice(r * width, (r + 1) * width));

/** `branchpoint dla`. */
export async function dlaCommand(study: StudyContext, f: Values<typeof DLA_FLAGS>): Promise<unknown> {
  const r = await STUDIES.dla.run(study, { ...chatTurn(f), good: futureOfFlag(f.good, 'good'), bad: futureOfFlag(f.bad, 'bad'), position: f.position });
  return {
    tokens: r.tokens, position: r.position, approximation: r.approximation,
    components: { embed: r.embed, pos_embed: r.posEmbed, attn: Array.from(r.attn), mlp: Array.from(r.mlp), final_bias: r.finalBias },
    heads: grid(r.heads, r.nHeads), attn_bias: Array.from(r.attnBias),
    frozen_margin: r.frozenMargin, margin: r.margin, entropy_gap: r.entropyGap, remainder: r.remainder,
  };
}

/** `branchpoint flow`. */
export async function flowCommand(study: StudyContext, f: Values<typeof FLOW_FLAGS>): Promise<unknown> {
  const r = await STUDIES.flow.run(study, { ...chatTurn(f), good: futureOfFlag(f.good, 'good'), bad: futureOfFlag(f.bad, 'bad'), spans: f.spans, generated: f.generated, baselineId: f.baseline });
  return {
    tokens: r.tokens.slice(0, r.nPrompt), generated_tokens: r.tokens.slice(r.nPrompt), definition: r.definition,
    attribution: Array.from(r.attribution), spans: r.spans, bias: r.bias, frozen_margin: r.frozenMargin, margin: r.margin,
    k: r.faithfulness?.k, deletion: r.faithfulness?.deletion, insertion: r.faithfulness?.insertion, baseline: r.faithfulness?.baselineId,
    direct: Array.from(r.direct), heads: grid(r.heads, r.nHeads), hops: r.hops,
  };
}
