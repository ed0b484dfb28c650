import type { HFConfig } from './types';

/**
 * Reads a numeric config key, trying each alias in order (HF renames keys across versions,
 * e.g. GPT-NeoX `rotary_pct` / `partial_rotary_factor`).
 * @throws Error when none of the keys is present and no fallback is given.
 */
export function num(config: HFConfig, keys: string | string[], fallback?: number): number {
  for (const k of Array.isArray(keys) ? keys : [keys]) {
    const v = config[k];
    if (typeof v === 'number' && Number.isFinite(v)) return v;
  }
  if (fallback !== undefined) return fallback;
  throw new Error(`config.json is missing "${Array.isArray(keys) ? keys.join('" or "') : keys}"`);
}

/** A config key that may be a number or a list of numbers (eos_token_id). */
export function ids(v: unknown): number[] {
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

/**
 * Rotary inverse frequencies inv_freq_j = theta^(−2j/dims), j < dims/2 (Su et al. 2021), with HF
 * `rope_scaling` applied: "llama3" (Llama 3.1 frequency-dependent interpolation, HF
 * `_compute_llama3_parameters`), "linear" (divide by factor) and null / "default" (none).
 * @throws Error for a rope_type this engine does not implement.
 */
export function ropeInvFreq(theta: number, dims: number, scaling: unknown): Float32Array {
  const half = dims / 2;
  const inv = new Float64Array(half);
  for (let j = 0; j < half; j++) inv[j] = 1 / theta ** ((2 * j) / dims);
  const s = scaling as Record<string, number | string> | null | undefined;
  const type = s ? String(s.rope_type ?? s.type ?? 'default') : 'default';
  if (type === 'llama3') {
    const factor = Number(s!.factor), low = Number(s!.low_freq_factor), high = Number(s!.high_freq_factor);
    const orig = Number(s!.original_max_position_embeddings);
    const lowWavelen = orig / low, highWavelen = orig / high;
    for (let j = 0; j < half; j++) {
      const wavelen = (2 * Math.PI) / inv[j];
      if (wavelen < highWavelen) continue;
      if (wavelen > lowWavelen) { inv[j] /= factor; continue; }
      const smooth = (orig / wavelen - low) / (high - low);
      inv[j] = (1 - smooth) * (inv[j] / factor) + smooth * inv[j];
    }
  } else if (type === 'linear') {
    for (let j = 0; j < half; j++) inv[j] /= Number(s!.factor);
  } else if (type !== 'default') {
    throw new Error(`rope_scaling type "${type}" is not supported (default, linear, llama3 are)`);
  }
  return Float32Array.from(inv);
}

/** Maps an HF activation name (hidden_act, hidden_activation, activation_function) to ours. */
export function activation(name: unknown): 'silu' | 'gelu' | 'gelu_tanh' | 'relu' {
  switch (name) {
    case 'silu': case 'swish': return 'silu';
    case 'gelu': return 'gelu';
    case 'gelu_new': case 'gelu_pytorch_tanh': case 'gelu_fast': return 'gelu_tanh';
    case 'relu': return 'relu';
    default: throw new Error(`activation "${String(name)}" is not supported (silu, gelu, gelu_new, gelu_pytorch_tanh, relu are)`);
  }
}
