/**
 * One layer's attention, every head: the `blocks.{l}.attn.hook_pattern` capture split into one
 * matrix per head, as the All heads view draws them (small multiples, circuitsvis style).
 */

/** One head's attention pattern: row-major [T, T], row = query position, column = key position. */
export type HeadPattern = Float32Array;

/**
 * Splits a layer's hook_pattern [n_heads, T, T] (attention probabilities, TransformerLens
 * `blocks.{l}.attn.hook_pattern`: softmax over keys of q·k/√d_head with the causal mask; the worker's
 * `activations` capture, flat) into n_heads row-major [T, T] matrices (views, not copies).
 * @throws Error when the capture does not hold n_heads × T × T values, or n_heads or T is not a positive integer.
 */
export function splitHeads(pattern: Float32Array, nHeads: number, T: number): HeadPattern[] {
  if (!Number.isInteger(nHeads) || nHeads < 1 || !Number.isInteger(T) || T < 1) throw new Error(`splitHeads: n_heads = ${nHeads} and T = ${T} must be positive integers`);
  if (pattern.length !== nHeads * T * T) throw new Error(`splitHeads: hook_pattern holds ${pattern.length} values, not n_heads × T × T = ${nHeads} × ${T} × ${T} = ${nHeads * T * T}`);
  return Array.from({ length: nHeads }, (_, h) => pattern.subarray(h * T * T, (h + 1) * T * T));
}
