/**
 * The runner's `grad` subcommand: ∂Δ/∂h of the margin at one hook, from the backward pass
 * (workers/engine/model/backward.ts, on the run's backend; workers/engine/studies/integrated_gradients.ts hookGradient).
 */
import type { Engine } from '../workers/engine/engine';
import { hookGradient } from '../workers/engine/studies/integrated_gradients';
import { gridRows } from '../workers/engine/studies/report_json';
import { text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, ENABLE_THINKING, GOOD, PROMPT, SYSTEM, TOOLS } from './shared_flags';
import { chatTurn, futureOfFlag } from './chat_turn';

export const GRAD_FLAGS = {
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(),
  hook: text('HOOK', { nonEmpty: true }).required().describe('a [pos, width] hook: hook_embed, blocks.L.hook_resid_pre, blocks.L.attn.hook_z, …'),
  'chat-template': CHAT_TEMPLATE, system: SYSTEM, tools: TOOLS, 'enable-thinking': ENABLE_THINKING,
};
export type GradFlags = Values<typeof GRAD_FLAGS>;

export const GRAD_ABOUT = `grad prints {hook, margin, tokens, grad: [n_tokens][width]}: ∂Δ/∂h of the margin Δ = log p(good) − log p(bad)
(first tokens, last position), from one forward and one backward (float32 on the run's backend, as the forward).`;

/** `branchpoint grad`: the gradient of the margin at one hook. */
export async function gradCommand(engine: Engine, f: GradFlags): Promise<unknown> {
  const r = await hookGradient(engine, { ...chatTurn(f), good: futureOfFlag(f.good, 'good'), bad: futureOfFlag(f.bad, 'bad'), hook: f.hook });
  return { hook: r.hook, margin: r.margin, tokens: r.tokens, grad: gridRows(r.grad, r.width) };
}
