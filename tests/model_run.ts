import type { Backend } from '../workers/engine/backend/backend';
import type { Intervention } from '../workers/engine/model/intervention';
import { RunContext } from '../workers/engine/model/run_context';
import type { Transformer } from '../workers/engine/model/transformer';

/** Where one forward stands: its first position, the prompt's length, the decode step (0: the prompt), and which rows' logits it returns. */
export interface ForwardAt { pos0: number; nPrompt: number; step: number; rows: 'all' | 'last' }

/**
 * Logits ([n, d_vocab] for 'all' rows, [d_vocab] for 'last') and the captured hooks of one forward of
 * `ids` at `at.pos0`, through the KV cache earlier forwards of the model filled.
 */
export async function runCapturedAt(
  b: Backend, model: Transformer, ids: readonly number[], hooks: readonly string[], at: ForwardAt, interventions: readonly Intervention[] = [],
): Promise<{ logits: Float32Array; captured: Map<string, Float32Array> }> {
  const want = new Set(hooks);
  const ctx = new RunContext(b, { pos0: at.pos0, n: ids.length, nPrompt: at.nPrompt, step: at.step }, (name) => want.has(name), interventions);
  const t = model.forward(Int32Array.from(ids), ctx, at.rows)!;
  const logits = await b.read(t);
  b.release(t);
  const captured = new Map<string, Float32Array>();
  for (const [name, v] of ctx.captured) captured.set(name, await b.read(v));
  ctx.release();
  return { logits, captured };
}

/**
 * Logits [n, d_vocab] and the captured hooks of one no-cache forward over `ids` from position 0.
 * @throws Error naming a hook that did not fire.
 */
export async function runCaptured(
  b: Backend, model: Transformer, ids: readonly number[], hooks: readonly string[], interventions: readonly Intervention[] = [],
): Promise<{ logits: Float32Array; captured: Map<string, Float32Array> }> {
  const run = await runCapturedAt(b, model, ids, hooks, { pos0: 0, nPrompt: ids.length, step: 0, rows: 'all' }, interventions);
  for (const h of hooks) if (!run.captured.has(h)) throw new Error(`hook ${h} did not fire`);
  return run;
}

/** Index of the first maximum (torch.argmax / HF greedy decoding). */
export function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/**
 * Greedy decoding through the KV cache: one forward over the prompt (step 0), then one forward per
 * generated token with pos0 advancing. Returns the new ids and each step's last-position logits.
 * @param capture the hooks each step's RunContext captures (e.g. the ones that split a fused path).
 */
export async function greedyWithCache(b: Backend, model: Transformer, prompt: readonly number[], nNew: number, capture?: (name: string) => boolean): Promise<{ ids: number[]; stepLogits: Float32Array[] }> {
  const ids: number[] = [];
  const stepLogits: Float32Array[] = [];
  let input = Int32Array.from(prompt);
  let pos0 = 0;
  for (let step = 0; step < nNew; step++) {
    const ctx = new RunContext(b, { pos0, n: input.length, nPrompt: prompt.length, step }, capture);
    const t = model.forward(input, ctx, 'last')!;
    const row = await b.read(t);
    b.release(t);
    ctx.release();
    stepLogits.push(row);
    const next = argmax(row);
    ids.push(next);
    pos0 += input.length;
    input = Int32Array.of(next);
  }
  return { ids, stepLogits };
}
