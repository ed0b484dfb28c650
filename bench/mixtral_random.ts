/**
 * A Mixtral-shaped model with random weights at SmolLM-135M's widths, for bench/moe.ts: the
 * SmolLM-135M config (bench/smollm_random.ts: d_model 576, 9 / 3 heads, vocab 49152, tied
 * embeddings) with each layer's MLP replaced by `num_local_experts` SwiGLU experts of width
 * d_mlp 1536 (Mixtral's 8, top 2, renormalised), and the dense Llama of the same total parameters
 * beside it (d_mlp = n_experts · 1536; the routers' n_experts · d_model per layer are the only
 * parameters it lacks). Written once into the ignored folder .artifacts/bench/ as F16 safetensors
 * (the engine widens them to float32 on load); never committed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeSafetensors, type TensorToWrite } from '../tools/safetensors_write';
import { seededRandom } from '../workers/engine/analysis/sampling';
import { llamaTensors, smolLM135MRandom, SMOLLM_135M } from './smollm_random';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? path.join(ROOT, '..', 'shared'));

/** The Mixtral-shaped config: SmolLM-135M's with `layers` layers and `experts` experts (top `topK`). */
export function mixtralConfig(layers: number, experts = 8, topK = 2) {
  return { ...SMOLLM_135M, architectures: ['MixtralForCausalLM'], model_type: 'mixtral', num_hidden_layers: layers, num_local_experts: experts, num_experts_per_tok: topK, sliding_window: null };
}

/**
 * The folder of the Mixtral-shaped random model (config.json, model.safetensors, stories260K's
 * tokenizer), built on first use: the Llama tensors of the same widths with each mlp.* replaced
 * by a router block_sparse_moe.gate [E, d_model] and experts w1 / w3 [d_mlp, d_model], w2
 * [d_model, d_mlp] (uniform ±1.7/√fan_in, w2 ±0.5/√fan_in, as the Llama's MLP).
 * @returns the folder's absolute path.
 */
export function mixtralRandom(layers: number, experts = 8, topK = 2): string {
  const c = mixtralConfig(layers, experts, topK);
  const dir = path.join(ROOT, '.artifacts', 'bench', `mixtral-576-random-${layers}l-${experts}e${topK}`);
  const done = path.join(dir, '.complete');
  if (fs.existsSync(done)) return dir;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(c, null, 2));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(SHARED, 'models', 'stories260K', f), path.join(dir, f));
  const rand = seededRandom(7);
  const D = c.hidden_size, F = c.intermediate_size;
  const mat = (out: number, inp: number, a = 1.7) => { const s = a / Math.sqrt(inp); return Float32Array.from({ length: out * inp }, () => (rand() * 2 - 1) * s); };
  const tensors: TensorToWrite[] = llamaTensors({ ...c, intermediate_size: 0 }).filter((t) => !t.name.includes('.mlp.')).map((t) => ({ ...t, dtype: 'F16' as const }));
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.block_sparse_moe`;
    tensors.push({ name: `${p}.gate.weight`, shape: [experts, D], data: mat(experts, D), dtype: 'F16' });
    for (let e = 0; e < experts; e++) {
      tensors.push(
        { name: `${p}.experts.${e}.w1.weight`, shape: [F, D], data: mat(F, D), dtype: 'F16' },
        { name: `${p}.experts.${e}.w3.weight`, shape: [F, D], data: mat(F, D), dtype: 'F16' },
        { name: `${p}.experts.${e}.w2.weight`, shape: [D, F], data: mat(D, F, 0.5), dtype: 'F16' },
      );
    }
  }
  fs.writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensors(tensors));
  fs.writeFileSync(done, '');
  return dir;
}

/** The dense Llama of the same total parameters as mixtralRandom(layers, experts): d_mlp = experts · 1536. */
export function denseTwin(layers: number, experts = 8): string {
  const c = { ...SMOLLM_135M, num_hidden_layers: layers, intermediate_size: experts * SMOLLM_135M.intermediate_size };
  return smolLM135MRandom(path.join(ROOT, '.artifacts', 'bench', `llama-576-dense-${layers}l-mlp${c.intermediate_size}`), c);
}
