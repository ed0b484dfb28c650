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

/** HF `tie_word_embeddings`; absent means the PretrainedConfig default, true. */
export function tiedEmbeddings(config: HFConfig): boolean {
  return config.tie_word_embeddings !== false;
}

/**
 * Which layers use sliding-window attention: HF `layer_types` ("sliding_attention" /
 * "full_attention") when the config lists them, else `isSliding(layer)` (the family's rule).
 * @throws Error when `layer_types` does not have one entry per layer.
 */
export function slidingLayers(config: HFConfig, nLayers: number, isSliding: (layer: number) => boolean): boolean[] {
  const types = config.layer_types;
  if (Array.isArray(types)) {
    if (types.length !== nLayers) throw new Error(`config.json layer_types has ${types.length} entries for ${nLayers} layers`);
    return types.map((t) => t === 'sliding_attention');
  }
  return Array.from({ length: nLayers }, (_, l) => isSliding(l));
}

/**
 * Sliding window per layer (ModelSpec.windows): `sliding_window` on the layers `slidingLayers`
 * selects, 0 (full causal) elsewhere; all 0 when `sliding_window` is absent or null.
 * @throws Error when `layer_types` does not have one entry per layer.
 */
export function layerWindows(config: HFConfig, nLayers: number, isSliding: (layer: number) => boolean): number[] {
  const w = config.sliding_window;
  if (typeof w !== 'number' || w <= 0) return new Array<number>(nLayers).fill(0);
  return slidingLayers(config, nLayers, isSliding).map((s) => (s ? w : 0));
}

/**
 * x rounded to the precision of HF `torch_dtype` (round to nearest even), as torch does when it
 * builds a scalar tensor in the model dtype: e.g. Gemma's sqrt(3584) = 59.87 becomes 60.0 in
 * bfloat16. float32 (or absent) rounds to float32.
 * @throws Error for a dtype other than float32, float16, bfloat16, or x outside float16's normal range.
 */
export function roundToDtype(x: number, torchDtype: unknown): number {
  const f = Math.fround(x);
  const bits = new Uint32Array(Float32Array.of(f).buffer)[0];
  switch (torchDtype ?? 'float32') {
    case 'float32': return f;
    case 'bfloat16': {
      const rounded = (bits + 0x7fff + ((bits >>> 16) & 1)) & 0xffff0000;
      return new Float32Array(Uint32Array.of(rounded >>> 0).buffer)[0];
    }
    case 'float16': {
      // float16 keeps 10 of float32's 23 mantissa bits; this holds in its normal range only
      if (!(Math.abs(f) >= 2 ** -14 && Math.abs(f) <= 65504)) throw new Error(`${x} is outside float16's normal range`);
      const rounded = (bits + 0xfff + ((bits >>> 13) & 1)) & 0xffffe000;
      return new Float32Array(Uint32Array.of(rounded >>> 0).buffer)[0];
    }
    default: throw new Error(`torch_dtype "${String(torchDtype)}" is not supported (float32, float16, bfloat16 are)`);
  }
}
