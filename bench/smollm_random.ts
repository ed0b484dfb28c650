/**
 * A SmolLM-135M-shaped Llama with random weights for the benchmarks (HuggingFaceTB/SmolLM-135M
 * config.json: 30 layers, d_model 576, 9 / 3 heads, d_mlp 1536, vocab 49152, tied embeddings),
 * written once into an ignored folder (.artifacts/bench/) with tools/safetensors_write.ts. Never
 * committed. The tokenizer is stories260K's (the benchmarks feed token ids < 512 directly).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeSafetensors, type TensorToWrite } from '../tools/safetensors_write';
import { seededRandom } from '../workers/engine/analysis/sampling';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? path.join(ROOT, '..', 'shared'));

/** SmolLM-135M's config.json (the fields the engine reads). */
export const SMOLLM_135M = {
  architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 576, intermediate_size: 1536,
  num_hidden_layers: 30, num_attention_heads: 9, num_key_value_heads: 3, vocab_size: 49152,
  max_position_embeddings: 2048, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: true,
  hidden_act: 'silu', bos_token_id: 1, eos_token_id: 2, torch_dtype: 'float32',
};

/** Tensors of a random Llama with this config (uniform ±a/√fan_in, norms 1), in HF names. */
export function llamaTensors(c: typeof SMOLLM_135M, seed = 1): { name: string; shape: number[]; data: Float32Array }[] {
  const rand = seededRandom(seed);
  const D = c.hidden_size, F = c.intermediate_size, hd = D / c.num_attention_heads, kv = c.num_key_value_heads * hd;
  const mat = (out: number, inp: number, a = 1.7) => {
    const s = a / Math.sqrt(inp);
    return Float32Array.from({ length: out * inp }, () => (rand() * 2 - 1) * s);
  };
  const ones = (n: number) => new Float32Array(n).fill(1);
  const t: { name: string; shape: number[]; data: Float32Array }[] = [
    { name: 'model.embed_tokens.weight', shape: [c.vocab_size, D], data: mat(c.vocab_size, D, 1) },
    { name: 'model.norm.weight', shape: [D], data: ones(D) },
  ];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}.`;
    t.push(
      { name: `${p}input_layernorm.weight`, shape: [D], data: ones(D) },
      { name: `${p}post_attention_layernorm.weight`, shape: [D], data: ones(D) },
      { name: `${p}self_attn.q_proj.weight`, shape: [D, D], data: mat(D, D) },
      { name: `${p}self_attn.k_proj.weight`, shape: [kv, D], data: mat(kv, D) },
      { name: `${p}self_attn.v_proj.weight`, shape: [kv, D], data: mat(kv, D) },
      { name: `${p}self_attn.o_proj.weight`, shape: [D, D], data: mat(D, D, 0.5) },
      { name: `${p}mlp.gate_proj.weight`, shape: [F, D], data: mat(F, D) },
      { name: `${p}mlp.up_proj.weight`, shape: [F, D], data: mat(F, D) },
      { name: `${p}mlp.down_proj.weight`, shape: [D, F], data: mat(D, F, 0.5) },
    );
  }
  return t;
}

/**
 * The model folder of `config` (default SmolLM-135M's; config.json, model.safetensors as F16 — the engine widens it to f32 on load —
 * and stories260K's tokenizer files), built on first use.
 * @returns the folder's absolute path.
 */
export function smolLM135MRandom(dir = path.join(ROOT, '.artifacts', 'bench', 'smollm-135m-random'), config: typeof SMOLLM_135M = SMOLLM_135M): string {
  const done = path.join(dir, '.complete');
  if (fs.existsSync(done)) return dir;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config, null, 2));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(SHARED, 'models', 'stories260K', f), path.join(dir, f));
  const tensors = llamaTensors(config).map((t): TensorToWrite => ({ ...t, dtype: 'F16' }));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensors(tensors));
  fs.writeFileSync(done, '');
  return dir;
}
