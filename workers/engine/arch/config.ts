import type { HFConfig } from './types';

/**
 * Bounds of HF config keys, checked before anything is allocated from them: [min, max, integer].
 * The maxima are far above any released model (Llama 3.1 405B: 126 layers, hidden 16384,
 * vocab 128256, 131072 positions) and keep a hostile config from allocating without bound.
 */
export const CONFIG_BOUNDS: Record<string, readonly [number, number, boolean]> = {
  num_hidden_layers: [1, 1024, true], n_layer: [1, 1024, true],
  hidden_size: [1, 131072, true], n_embd: [1, 131072, true],
  num_attention_heads: [1, 4096, true], n_head: [1, 4096, true], num_key_value_heads: [1, 4096, true],
  head_dim: [1, 16384, true],
  intermediate_size: [1, 1 << 20, true], n_inner: [1, 1 << 20, true],
  vocab_size: [1, 1 << 22, true],
  max_position_embeddings: [1, 1 << 24, true], n_positions: [1, 1 << 24, true],
  sliding_window: [1, 1 << 24, true], sliding_window_pattern: [1, 1024, true], max_window_layers: [0, 1024, true],
  rms_norm_eps: [Number.MIN_VALUE, 1, false], layer_norm_eps: [Number.MIN_VALUE, 1, false], layer_norm_epsilon: [Number.MIN_VALUE, 1, false],
  rope_theta: [Number.MIN_VALUE, 1e15, false], rotary_emb_base: [Number.MIN_VALUE, 1e15, false], rope_local_base_freq: [Number.MIN_VALUE, 1e15, false],
  partial_rotary_factor: [Number.MIN_VALUE, 1, false], rotary_pct: [Number.MIN_VALUE, 1, false],
  num_local_experts: [1, 4096, true], num_experts: [1, 4096, true], num_experts_per_tok: [1, 4096, true],
  moe_intermediate_size: [1, 1 << 20, true], shared_expert_intermediate_size: [0, 1 << 20, true], decoder_sparse_step: [1, 1024, true],
  attn_logit_softcapping: [0, 1e6, false], final_logit_softcapping: [0, 1e6, false], query_pre_attn_scalar: [Number.MIN_VALUE, 1e9, false],
};

/**
 * Checks value `v` of config key `key` against CONFIG_BOUNDS (keys without bounds: any finite number).
 * @throws Error naming config.json, the key, the value and the expected range.
 */
export function checkConfigNumber(key: string, v: number): number {
  const b = CONFIG_BOUNDS[key];
  if (!Number.isFinite(v)) throw new Error(`config.json "${key}" is ${v}; expected a finite number`);
  if (!b) return v;
  const [min, max, int] = b;
  if (int && !Number.isInteger(v)) throw new Error(`config.json "${key}" is ${v}; expected a whole number in [${min}, ${max}]`);
  if (v < min || v > max) throw new Error(`config.json "${key}" is ${v}; expected ${int ? 'a whole number' : 'a number'} in [${min === Number.MIN_VALUE ? '>0' : min}, ${max}]`);
  return v;
}

/**
 * Reads a numeric config key, trying each alias in order (HF renames keys across versions,
 * e.g. GPT-NeoX `rotary_pct` / `partial_rotary_factor`), checked by checkConfigNumber.
 * @throws Error when none of the keys is present and no fallback is given, when a key holds
 *   something other than a number (a string "64" is named as such, not reported missing), or when
 *   the value breaks its bound.
 */
export function num(config: HFConfig, keys: string | string[], fallback?: number): number {
  for (const k of Array.isArray(keys) ? keys : [keys]) {
    const v = config[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number') throw new Error(`config.json "${k}" is ${JSON.stringify(v)} (${Array.isArray(v) ? 'a list' : `a ${typeof v}`}); expected a number`);
    return checkConfigNumber(k, v);
  }
  if (fallback !== undefined) return fallback;
  throw new Error(`config.json is missing "${Array.isArray(keys) ? keys.join('" or "') : keys}"`);
}

/**
 * d_head = hidden_size / num_attention_heads, for configs without head_dim.
 * @throws Error naming both keys when the heads do not divide the width.
 */
export function headDimOf(dModel: number, nHeads: number, keys: readonly [string, string] = ['hidden_size', 'num_attention_heads']): number {
  if (dModel % nHeads !== 0) throw new Error(`config.json "${keys[0]}" ${dModel} is not divisible by "${keys[1]}" ${nHeads}; expected a multiple (or give head_dim)`);
  return dModel / nHeads;
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
 * `_compute_llama3_parameters`), "linear" (divide by factor), "freq_factors" (divide inv_freq_j by
 * `freq_factors[j]`: llama.cpp's per-dimension `rope_freqs` tensor, as ggml_rope_ext applies it; the
 * form a GGUF import of Llama 3 takes, io/gguf_arch.ts) and null / "default" (none).
 * @throws Error for a rope_type this engine does not implement, or freq_factors that are not
 *   dims/2 finite positive numbers.
 */
export function ropeInvFreq(theta: number, dims: number, scaling: unknown): Float32Array {
  if (!(Number.isInteger(dims) && dims >= 2 && dims % 2 === 0)) throw new Error(`config.json: the rotary dimensions (head_dim × partial_rotary_factor) are ${dims}; expected an even whole number ≥ 2`);
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
  } else if (type === 'freq_factors') {
    const f = s!.freq_factors as unknown;
    if (!Array.isArray(f) || f.length !== half || !f.every((x) => typeof x === 'number' && Number.isFinite(x) && x > 0)) throw new Error(`rope_scaling freq_factors must be ${half} finite positive numbers (one per rotary frequency)`);
    for (let j = 0; j < half; j++) inv[j] /= f[j] as number;
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
