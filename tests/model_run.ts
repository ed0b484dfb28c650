import type { Backend } from '../workers/engine/backend/backend';
import type { Intervention } from '../workers/engine/model/intervention';
import { RunContext } from '../workers/engine/model/run_context';
import type { Transformer } from '../workers/engine/model/transformer';

/** Logits [n, d_vocab] and the captured hooks of one no-cache forward over `ids` from position 0. */
export async function runCaptured(
  b: Backend, model: Transformer, ids: readonly number[], hooks: readonly string[], interventions: readonly Intervention[] = [],
): Promise<{ logits: Float32Array; captured: Map<string, Float32Array> }> {
  const want = new Set(hooks);
  const ctx = new RunContext(b, { pos0: 0, n: ids.length, nPrompt: ids.length, step: 0 }, (name) => want.has(name), interventions);
  const t = model.forward(Int32Array.from(ids), ctx, 'all')!;
  const logits = await b.read(t);
  b.release(t);
  const captured = new Map<string, Float32Array>();
  for (const [name, v] of ctx.captured) captured.set(name, await b.read(v));
  ctx.release();
  for (const h of hooks) if (!captured.has(h)) throw new Error(`hook ${h} did not fire`);
  return { logits, captured };
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
