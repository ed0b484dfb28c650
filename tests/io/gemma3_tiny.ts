import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { encodeSafetensors, type TensorToWrite } from '../../tools/safetensors_write';
import { sharedPath } from '../shared';

/**
 * A tiny Gemma-3-shaped model (no Gemma 3 fixture exists): the config a Gemma3ForCausalLM would
 * save at this size (7 layers, so layers 0–4 and 6 are local with window 4 and layer 5 global;
 * head_dim 32 = query_pre_attn_scalar, as released Gemma 3 below 27B; two RoPE bases), F32
 * safetensors of seeded uniform weights under HF names (norm weights w = U(±0.3), since the RMSNorm
 * scales by 1 + w), and the fixtures' shared 512-token tokenizer.
 */
export const GEMMA3_TINY = {
  architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', hidden_size: 64, intermediate_size: 128, num_hidden_layers: 7,
  num_attention_heads: 4, num_key_value_heads: 2, head_dim: 32, vocab_size: 512, max_position_embeddings: 128, rms_norm_eps: 1e-6,
  rope_theta: 1_000_000, rope_local_base_freq: 10000, sliding_window: 4, sliding_window_pattern: 6, query_pre_attn_scalar: 32,
  final_logit_softcapping: null, attn_logit_softcapping: null, hidden_activation: 'gelu_pytorch_tanh', tie_word_embeddings: true,
  bos_token_id: 511, eos_token_id: 511, torch_dtype: 'float32',
} as const;

/** Uniform values on [−half, half] from a mulberry32 stream seeded with `seed`. */
function uniform(n: number, half: number, seed: number): Float32Array {
  let a = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), a | 1);
    r ^= r + Math.imul(r ^ (r >>> 7), r | 61);
    return half * ((((r ^ (r >>> 14)) >>> 0) / 4294967296) * 2 - 1);
  });
}

/**
 * Writes the tiny Gemma 3 folder (config.json, model.safetensors, tokenizer files) into a fresh
 * temporary folder.
 * @returns its path.
 */
export function gemma3TinyFolder(): string {
  const c = GEMMA3_TINY, D = c.hidden_size, hd = c.head_dim;
  const tensors: TensorToWrite[] = [];
  let seed = 1;
  const add = (name: string, shape: number[], half: number) => tensors.push({ name, shape, dtype: 'F32', data: uniform(shape.reduce((x, y) => x * y, 1), half, seed++) });
  add('model.embed_tokens.weight', [c.vocab_size, D], 0.15);
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}.`;
    for (const n of ['input_layernorm', 'post_attention_layernorm', 'pre_feedforward_layernorm', 'post_feedforward_layernorm']) add(`${p}${n}.weight`, [D], 0.3);
    add(`${p}self_attn.q_norm.weight`, [hd], 0.3);
    add(`${p}self_attn.k_norm.weight`, [hd], 0.3);
    add(`${p}self_attn.q_proj.weight`, [c.num_attention_heads * hd, D], 1.7 / Math.sqrt(D));
    add(`${p}self_attn.k_proj.weight`, [c.num_key_value_heads * hd, D], 1.7 / Math.sqrt(D));
    add(`${p}self_attn.v_proj.weight`, [c.num_key_value_heads * hd, D], 1.7 / Math.sqrt(D));
    add(`${p}self_attn.o_proj.weight`, [D, c.num_attention_heads * hd], 0.5 / Math.sqrt(c.num_attention_heads * hd));
    add(`${p}mlp.gate_proj.weight`, [c.intermediate_size, D], 1.7 / Math.sqrt(D));
    add(`${p}mlp.up_proj.weight`, [c.intermediate_size, D], 1.7 / Math.sqrt(D));
    add(`${p}mlp.down_proj.weight`, [D, c.intermediate_size], 0.5 / Math.sqrt(c.intermediate_size));
  }
  add('model.norm.weight', [D], 0.3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-gemma3-tiny-'));
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(c, null, 2));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensors(tensors));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(sharedPath('fixtures', 'llama-tiny', f), path.join(dir, f));
  return dir;
}
