import type { WeightStorage } from '../workers/engine/model/quant_error';

export const WEIGHTS_USAGE = `Weight storage (every command): --weights f32|f16|q8_0|q4_0 (default f32). q8_0 / q4_0 quantise the
  linear weights on load into ggml Q8_0 / Q4_0 blocks (8.5 / 4.5 bits per weight; embeddings, unembedding
  and norms stay float32) and print to stderr the max |Δlogit| against float32 on a fixed probe prompt.
  A folder holding model.gguf (llama.cpp; llama, qwen3, gemma2, gemma3; F32, F16, Q8_0, Q4_0 tensors) and tokenizer.json loads as stored.`;

/** One stderr line: the storage and, when quantised, the logit error against float32. */
export function storageLine(s: WeightStorage): string {
  if (s.logitError) {
    const e = s.logitError;
    return `weights: ${s.description}; max |Δlogit| vs float32 on the ${e.ids.length}-token probe: ${e.maxAbs.toPrecision(3)} (last position ${e.lastMaxAbs.toPrecision(3)}; max |logit| ${e.maxLogit.toPrecision(3)})`;
  }
  return `weights: ${s.description}${s.unmeasured ? `; ${s.unmeasured}` : ''}`;
}
