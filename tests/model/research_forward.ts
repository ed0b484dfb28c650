import { whole, type Float64Weights } from './research_weights';

/**
 * A float64 forward of the research-size checkpoints' families, written from the HF definitions and
 * sharing no code with the engine, for tests: Llama (`modeling_llama.py`, with `rope_scaling`
 * llama3 from `modeling_rope_utils.py` _compute_llama3_parameters), Qwen3 (`modeling_qwen3.py`:
 * per-head RMSNorm q_norm / k_norm before RoPE) and Gemma 3 text (`modeling_gemma3.py`: embedding ×
 * √d_model rounded to the checkpoint's bfloat16, (1 + w) RMSNorms, norms after attention and around
 * the MLP, gelu_tanh GeGLU, scale query_pre_attn_scalar^−½, sliding layers unless (l + 1) % 6 = 0
 * with their own RoPE base rope_local_base_freq). Full causal attention over every position (the
 * tests' prompts are far shorter than any sliding window); GQA with n_heads / n_kv_heads queries
 * per key head; rotate_half RoPE.
 */
export interface ReferenceConfig {
  model_type: string;
  hidden_size: number; intermediate_size: number; num_hidden_layers: number; num_attention_heads: number;
  num_key_value_heads: number; head_dim: number; vocab_size: number; rms_norm_eps: number; rope_theta: number;
  rope_scaling?: { rope_type: string; factor: number; low_freq_factor: number; high_freq_factor: number; original_max_position_embeddings: number };
  rope_local_base_freq?: number; sliding_window_pattern?: number; query_pre_attn_scalar?: number;
}

/** y[t] = W x[t] for every row t of X; W [out, in] read in blocks of rows so it is decoded once. */
function linear(w: Float64Weights, name: string, X: Float64Array[]): Float64Array[] {
  const [out, inp] = w.shape(name);
  const Y = X.map(() => new Float64Array(out));
  const block = Math.max(1, Math.floor((1 << 22) / inp));
  for (let r0 = 0; r0 < out; r0 += block) {
    const n = Math.min(block, out - r0), W = w.rows(name, r0, n);
    for (let r = 0; r < n; r++) {
      for (let t = 0; t < X.length; t++) {
        const x = X[t];
        let s = 0;
        for (let c = 0, o = r * inp; c < inp; c++) s += W[o + c] * x[c];
        Y[t][r0 + r] = s;
      }
    }
  }
  return Y;
}

/** RMSNorm of x (length a multiple of w's) in groups of w.length: x / √(mean x² + ε) · (offset + w). */
function rmsNorm(x: Float64Array, w: Float64Array, eps: number, offset: number): Float64Array {
  const d = w.length, y = new Float64Array(x.length);
  for (let g = 0; g < x.length; g += d) {
    let ms = 0;
    for (let i = 0; i < d; i++) ms += x[g + i] * x[g + i];
    const r = 1 / Math.sqrt(ms / d + eps);
    for (let i = 0; i < d; i++) y[g + i] = x[g + i] * r * (offset + w[i]);
  }
  return y;
}

/** inv_freq[i] = θ^(−2i/d), then Llama 3's band rescaling when `scaling` is llama3. */
function invFreq(theta: number, d: number, scaling?: ReferenceConfig['rope_scaling']): number[] {
  return Array.from({ length: d / 2 }, (_, i) => {
    const f = theta ** (-(2 * i) / d);
    if (!scaling || scaling.rope_type !== 'llama3') return f;
    const wavelen = (2 * Math.PI) / f;
    const low = scaling.original_max_position_embeddings / scaling.low_freq_factor, high = scaling.original_max_position_embeddings / scaling.high_freq_factor;
    if (wavelen < high) return f;
    if (wavelen > low) return f / scaling.factor;
    const smooth = (scaling.original_max_position_embeddings / wavelen - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor);
    return (1 - smooth) * (f / scaling.factor) + smooth * f;
  });
}

/** rotate_half RoPE on each head of x [heads · d] at position `pos`, in place. */
function rope(x: Float64Array, d: number, pos: number, freq: number[]): void {
  for (let h = 0; h < x.length; h += d) {
    for (let i = 0; i < d / 2; i++) {
      const c = Math.cos(pos * freq[i]), s = Math.sin(pos * freq[i]), a = x[h + i], b = x[h + i + d / 2];
      x[h + i] = a * c - b * s;
      x[h + i + d / 2] = b * c + a * s;
    }
  }
}

/** float64 → nearest bfloat16 (ties to even), as torch.tensor(v, dtype=torch.bfloat16). */
function toBf16(v: number): number {
  const e = Math.floor(Math.log2(Math.abs(v))), step = 2 ** (e - 7), q = v / step, r = Math.round(q);
  return (Math.abs(q - Math.trunc(q)) === 0.5 && r % 2 !== 0 ? r - 1 : r) * step;
}

/**
 * The logits of the last of `tokens` (positions 0..T−1), [vocab_size], in float64.
 * @param w the checkpoint's tensors under HF names; the head is the tied embedding.
 * @throws Error for a model_type other than llama, qwen3 and gemma3_text.
 */
export function referenceLogits(c: ReferenceConfig, w: Float64Weights, tokens: readonly number[]): Float64Array {
  if (!['llama', 'qwen3', 'gemma3_text'].includes(c.model_type)) throw new Error(`no reference forward for ${c.model_type}`);
  const gemma = c.model_type === 'gemma3_text', off = gemma ? 1 : 0, eps = c.rms_norm_eps;
  const D = c.hidden_size, hd = c.head_dim, H = c.num_attention_heads, Hkv = c.num_key_value_heads, T = tokens.length;
  const embedScale = gemma ? toBf16(Math.sqrt(D)) : 1;
  let X = tokens.map((id) => w.rows('model.embed_tokens.weight', id, 1).map((v) => v * embedScale));
  const globalFreq = invFreq(c.rope_theta, hd, c.rope_scaling), localFreq = gemma ? invFreq(c.rope_local_base_freq ?? 10000, hd) : globalFreq;
  const scale = (gemma ? (c.query_pre_attn_scalar ?? hd) : hd) ** -0.5;
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}.`, g = (n: string) => whole(w, p + n);
    const freq = gemma && (l + 1) % (c.sliding_window_pattern ?? 6) !== 0 ? localFreq : globalFreq;
    const h = X.map((x) => rmsNorm(x, g('input_layernorm.weight'), eps, off));
    let q = linear(w, `${p}self_attn.q_proj.weight`, h), k = linear(w, `${p}self_attn.k_proj.weight`, h);
    const v = linear(w, `${p}self_attn.v_proj.weight`, h);
    if (c.model_type !== 'llama') {
      q = q.map((x) => rmsNorm(x, g('self_attn.q_norm.weight'), eps, off));
      k = k.map((x) => rmsNorm(x, g('self_attn.k_norm.weight'), eps, off));
    }
    q.forEach((x, t) => rope(x, hd, t, freq));
    k.forEach((x, t) => rope(x, hd, t, freq));
    const z = X.map(() => new Float64Array(H * hd));
    for (let t = 0; t < T; t++) {
      for (let a = 0; a < H; a++) {
        const kv = Math.floor(a / (H / Hkv)) * hd;
        const s = Array.from({ length: t + 1 }, (_, u) => { let d = 0; for (let i = 0; i < hd; i++) d += q[t][a * hd + i] * k[u][kv + i]; return d * scale; });
        const m = Math.max(...s), e = s.map((x) => Math.exp(x - m)), sum = e.reduce((x, y) => x + y, 0);
        for (let u = 0; u <= t; u++) for (let i = 0; i < hd; i++) z[t][a * hd + i] += (e[u] / sum) * v[u][kv + i];
      }
    }
    let attn = linear(w, `${p}self_attn.o_proj.weight`, z);
    if (gemma) attn = attn.map((x) => rmsNorm(x, g('post_attention_layernorm.weight'), eps, off));
    X = X.map((x, t) => x.map((xi, i) => xi + attn[t][i]));
    const h2 = X.map((x) => rmsNorm(x, g(gemma ? 'pre_feedforward_layernorm.weight' : 'post_attention_layernorm.weight'), eps, off));
    const gate = linear(w, `${p}mlp.gate_proj.weight`, h2), up = linear(w, `${p}mlp.up_proj.weight`, h2);
    const act = gate.map((gt, t) => gt.map((a, i) => (gemma ? 0.5 * a * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (a + 0.044715 * a ** 3))) : a / (1 + Math.exp(-a))) * up[t][i]));
    let down = linear(w, `${p}mlp.down_proj.weight`, act);
    if (gemma) down = down.map((x) => rmsNorm(x, g('post_feedforward_layernorm.weight'), eps, off));
    X = X.map((x, t) => x.map((xi, i) => xi + down[t][i]));
  }
  const last = rmsNorm(X[T - 1], whole(w, 'model.norm.weight'), eps, off);
  return linear(w, 'model.embed_tokens.weight', [last])[0];
}
