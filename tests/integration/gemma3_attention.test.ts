import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { decodeTensor, parseSafetensors } from '../../workers/engine/io/safetensors';
import { loadTransformer } from '../../workers/engine/model/load';
import { encodeSafetensors } from '../../tools/safetensors_write';
import { runCaptured } from '../model_run';
import { readReference, sharedPath } from '../shared';
import { F32_TOL, matVec, maxDiff } from '../reference_math';

/**
 * Gemma 3 text (model_type gemma3_text) has no fixture. This check builds one from the gemma2-tiny
 * fixture: the same weights (embedding, input_layernorm, q/k/v/o, MLP, the four sandwich norms),
 * config.json with model_type gemma3_text, plus per-head q_norm / k_norm weights that Gemma 2 lacks
 * (seeded values). Layer 0's input is then exactly gemma2's `hidden_states[0]` (W_E[ids] · sqrt(d_model),
 * HF's own output), and the layer-0 attention pattern has a closed form computed here from it:
 *   n = (1 + w_ln1) ⊙ x / rms(x);  q_h = (1 + w_qn) ⊙ RMS(W_q n)_h,  k_g = (1 + w_kn) ⊙ RMS(W_k n)_g;
 *   RoPE (rotate_half) at base rope_local_base_freq on sliding layers, rope_theta on global ones;
 *   s = cap · tanh(q·k · query_pre_attn_scalar^-½ / cap); mask i − window < k ≤ i on sliding layers;
 *   A = softmax(s), query head h reading KV head h // (n_heads / n_kv_heads)   (HF modeling_gemma3.py).
 * What it proves: Gemma 3's config reading (layer kinds from sliding_window_pattern and from
 * layer_types, two RoPE bases), the q_norm/k_norm loading and their (1 + w) offset, scaling, soft-cap
 * and window, as the engine applies them at layer 0. What it does not prove: the later layers, the
 * MLP/sandwich norms under gemma3 (the same code the gemma2 fixture checks end to end), or
 * rope_scaling on global layers.
 */
const SRC = sharedPath('fixtures', 'gemma2-tiny');
const g2 = JSON.parse(fs.readFileSync(`${SRC}/config.json`, 'utf8'));
const meta = JSON.parse(fs.readFileSync(`${SRC}/reference/meta.json`, 'utf8'));
const ids: number[] = meta.sequences[0].input_ids;
const T = ids.length;
const H = g2.num_attention_heads, KV = g2.num_key_value_heads, dh = g2.head_dim, D = g2.hidden_size, eps = g2.rms_norm_eps;
const x0 = readReference(`${SRC}/reference/seq0.safetensors`).get('hidden_states')!.data.subarray(0, T * D);
const weights = readReference(`${SRC}/model.safetensors`);
const W = (n: string) => weights.get(n)!.data;
const qNorm = Float32Array.from({ length: dh }, (_, i) => 0.3 * Math.sin(i + 1));
const kNorm = Float32Array.from({ length: dh }, (_, i) => 0.2 * Math.cos(i + 1));

let tmp: string;
beforeAll(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-gemma3-')); });
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A gemma3_text model folder: gemma2-tiny's tensors plus q_norm/k_norm, with `extra` config keys. */
function gemma3Folder(name: string, extra: Record<string, unknown>): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  const bytes = new Uint8Array(fs.readFileSync(`${SRC}/model.safetensors`));
  const h = parseSafetensors(bytes);
  const tensors = [...h.tensors.values()].map((e) => ({ name: e.name, shape: e.shape, dtype: 'F32' as const, data: decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype) }));
  for (let l = 0; l < g2.num_hidden_layers; l++) {
    tensors.push({ name: `model.layers.${l}.self_attn.q_norm.weight`, shape: [dh], dtype: 'F32', data: qNorm });
    tensors.push({ name: `model.layers.${l}.self_attn.k_norm.weight`, shape: [dh], dtype: 'F32', data: kNorm });
  }
  fs.writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensors(tensors));
  const config = { ...g2, architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', rope_theta: 1_000_000, rope_local_base_freq: 10_000, ...extra };
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(SRC, f), path.join(dir, f));
  return dir;
}

/** Gemma RMSNorm with the (1 + w) offset. */
function gemmaNorm(x: ArrayLike<number>, w: ArrayLike<number>): Float64Array {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i] * x[i];
  const r = 1 / Math.sqrt(ss / x.length + eps);
  return Float64Array.from({ length: x.length }, (_, i) => (1 + w[i]) * x[i] * r);
}

/** HF rotate_half RoPE of one head vector at position pos. */
function rope(v: Float64Array, pos: number, base: number): Float64Array {
  const half = dh / 2, out = new Float64Array(dh);
  for (let j = 0; j < half; j++) {
    const a = pos * base ** (-(2 * j) / dh), c = Math.cos(a), s = Math.sin(a);
    out[j] = v[j] * c - v[j + half] * s;
    out[j + half] = v[j + half] * c + v[j] * s;
  }
  return out;
}

/** Layer-0 attention probabilities [H, T, T] from the definition above. */
function expectedPattern(base: number, window: number): Float64Array {
  const q: Float64Array[][] = [], k: Float64Array[][] = [];
  for (let t = 0; t < T; t++) {
    const n = gemmaNorm(x0.subarray(t * D, (t + 1) * D), W('model.layers.0.input_layernorm.weight'));
    const qa = matVec(W('model.layers.0.self_attn.q_proj.weight'), n, H * dh), ka = matVec(W('model.layers.0.self_attn.k_proj.weight'), n, KV * dh);
    q.push(Array.from({ length: H }, (_, h) => rope(gemmaNorm(qa.subarray(h * dh, (h + 1) * dh), qNorm), t, base)));
    k.push(Array.from({ length: KV }, (_, g) => rope(gemmaNorm(ka.subarray(g * dh, (g + 1) * dh), kNorm), t, base)));
  }
  const cap = g2.attn_logit_softcapping, scale = g2.query_pre_attn_scalar ** -0.5;
  const out = new Float64Array(H * T * T);
  for (let h = 0; h < H; h++) for (let i = 0; i < T; i++) {
    const s = Array.from({ length: T }, (_, j) => {
      if (j > i || (window > 0 && i - j >= window)) return -Infinity;
      let d = 0;
      for (let e = 0; e < dh; e++) d += q[i][h][e] * k[j][Math.floor(h / (H / KV))][e];
      return cap * Math.tanh((d * scale) / cap);
    });
    const mx = Math.max(...s), z = s.reduce((acc, x) => acc + Math.exp(x - mx), 0);
    s.forEach((x, j) => { out[(h * T + i) * T + j] = Math.exp(x - mx) / z; });
  }
  return out;
}

async function layer0Pattern(dir: string): Promise<{ pattern: Float32Array; logits: Float32Array }> {
  const b = new CpuBackend();
  const { model } = await loadTransformer(new NodeFiles(dir), b);
  const { captured, logits } = await runCaptured(b, model, ids, ['blocks.0.attn.hook_pattern']);
  b.dispose();
  return { pattern: captured.get('blocks.0.attn.hook_pattern')!, logits };
}

describe('gemma3_text built on gemma2-tiny: layer-0 attention against the closed form from HF\'s hidden_states[0]', () => {
  it('sliding layer 0 (sliding_window_pattern 2): local RoPE base 10000, window 6, q/k (1 + w) norms', async () => {
    const { pattern, logits } = await layer0Pattern(gemma3Folder('sliding', { sliding_window_pattern: 2 }));
    expect(maxDiff(pattern, expectedPattern(10_000, g2.sliding_window))).toBeLessThanOrEqual(F32_TOL);
    // The closed form is sensitive to the layer kind: a global layer-0 pattern differs.
    expect(maxDiff(expectedPattern(10_000, g2.sliding_window), expectedPattern(1_000_000, 0))).toBeGreaterThan(1e-2);
    expect(Math.max(...logits.map(Math.abs))).toBeLessThanOrEqual(g2.final_logit_softcapping); // final soft-cap
  });

  it('global layer 0 (layer_types): RoPE base rope_theta = 1e6, no window', async () => {
    const { pattern } = await layer0Pattern(gemma3Folder('global', { layer_types: ['full_attention', 'sliding_attention', 'full_attention'] }));
    expect(maxDiff(pattern, expectedPattern(1_000_000, 0))).toBeLessThanOrEqual(F32_TOL);
  });
});
