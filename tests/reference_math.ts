import * as fs from 'node:fs';
import { readReference, sharedPath } from './shared';

/**
 * Closed forms the reference checks compute in the test itself, in float64, from the golden arrays
 * and the checkpoint's tensors. Deliberately written from the definitions (DESIGN.md §3, the HF
 * Llama conventions in ../shared/models/<model>/reference/README.md), sharing no code with the
 * engine, so a bug in an engine op or analysis cannot cancel out.
 */

/** Tolerance of float32 engine outputs against the float64 references (reference/README.md: "a correct float32 implementation lands within about 1e-4"). */
export const F32_TOL = 1e-4;

/** log_softmax of one row, float64. */
export function logSoftmax(row: ArrayLike<number>): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < row.length; i++) m = Math.max(m, row[i]);
  let s = 0;
  for (let i = 0; i < row.length; i++) s += Math.exp(row[i] - m);
  const lse = m + Math.log(s);
  return Float64Array.from(row as ArrayLike<number>, (x) => x - lse);
}

/** log Σ exp(x) of a list, float64. */
export function lse(xs: readonly number[]): number {
  const m = Math.max(...xs);
  return m + Math.log(xs.reduce((s, x) => s + Math.exp(x - m), 0));
}

/** HF LlamaRMSNorm: w · x / sqrt(mean(x²) + eps). */
export function rmsNorm(x: ArrayLike<number>, w: ArrayLike<number>, eps: number): Float64Array {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i] * x[i];
  const r = 1 / Math.sqrt(ss / x.length + eps);
  return Float64Array.from({ length: x.length }, (_, i) => w[i] * x[i] * r);
}

/** y = W x for W in nn.Linear layout [out, in] (row-major). */
export function matVec(W: ArrayLike<number>, x: ArrayLike<number>, out: number): Float64Array {
  const n = x.length;
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += W[o * n + i] * x[i];
    y[o] = s;
  }
  return y;
}

/** Euclidean norm ‖x‖₂. */
export function l2(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i] * x[i];
  return Math.sqrt(s);
}

/** Largest |a_i − b_i| (lengths must agree). */
export function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** The k largest entries of a row, by value descending (ids ascending on ties). */
export function topK(row: ArrayLike<number>, k: number): { ids: number[]; values: number[] } {
  const ids = Array.from({ length: row.length }, (_, i) => i).sort((a, b) => row[b] - row[a] || a - b).slice(0, k);
  return { ids, values: ids.map((i) => row[i]) };
}

export interface RealPrompt {
  name: string; prompt: string; input_ids: number[]; n_prompt: number; greedy_ids: number[]; sequence_ids: number[]; n_positions: number;
}

/** One real model's golden data: reference.json, the checkpoint's tensors, and each prompt's arrays. */
export function realModel(name: 'stories260K' | 'aidreams260K') {
  const dir = sharedPath('models', name);
  const ref = JSON.parse(fs.readFileSync(`${dir}/reference/reference.json`, 'utf8')) as { n_gen: number; prompts: RealPrompt[] };
  const config = JSON.parse(fs.readFileSync(`${dir}/config.json`, 'utf8')) as {
    num_hidden_layers: number; num_attention_heads: number; num_key_value_heads: number; hidden_size: number; vocab_size: number; rms_norm_eps: number; head_dim?: number;
  };
  const weights = readReference(`${dir}/model.safetensors`);
  const L = config.num_hidden_layers, D = config.hidden_size, V = config.vocab_size;
  const H = config.num_attention_heads, KV = config.num_key_value_heads, dHead = config.head_dim ?? D / H;
  const arrays = (p: RealPrompt) => readReference(`${dir}/reference/${p.name}.safetensors`);
  const w = (n: string) => weights.get(n)!.data;
  /**
   * h^l_t for l = 0 (embeddings) .. L (resid_post of the last block), the rows the lens and the
   * residual norms read, from the reference arrays of prompt p (positions 0..n_positions-1).
   */
  const resid = (a: ReturnType<typeof arrays>, p: RealPrompt, l: number, t: number): Float32Array => {
    if (l === 0) return a.get('embeddings')!.data.subarray(t * D, (t + 1) * D);
    const off = ((l - 1) * p.n_positions + t) * D;
    return a.get('resid_post')!.data.subarray(off, off + D);
  };
  /** Logit-lens log-probs of a residual vector: log_softmax(W_U · RMSNorm_f(h)) (nostalgebraist 2020). */
  const lens = (h: ArrayLike<number>) => logSoftmax(matVec(w('lm_head.weight'), rmsNorm(h, w('model.norm.weight'), config.rms_norm_eps), V));
  /** hook_v of block l at position t: W_v · RMSNorm_ln1(h^l_t) [n_kv_heads·d_head] (Llama: no bias). */
  const value = (a: ReturnType<typeof arrays>, p: RealPrompt, l: number, t: number) =>
    matVec(w(`model.layers.${l}.self_attn.v_proj.weight`), rmsNorm(resid(a, p, l, t), w(`model.layers.${l}.input_layernorm.weight`), config.rms_norm_eps), KV * dHead);
  /** attn_probs[l, h, i, k] of prompt p. */
  const attn = (a: ReturnType<typeof arrays>, p: RealPrompt, l: number, h: number, i: number, k: number) => {
    const T = p.n_positions;
    return a.get('attn_probs')!.data[((l * H + h) * T + i) * T + k];
  };
  return { dir, ref, config, weights, w, L, D, V, H, KV, dHead, arrays, resid, lens, value, attn };
}
export type RealModel = ReturnType<typeof realModel>;
