/**
 * Bytes read per decode step: the Mixtral-shaped random model at SmolLM-135M widths (bench/mixtral_random.ts:
 * d_model 576, 8 experts of d_mlp 1536, top 2) against the dense Llama of the same total parameters
 * (d_mlp 12288), float32 weights, on the CPU backend and on WebGPU in Node (Dawn on the machine's
 * Vulkan driver: Mesa lavapipe here). Two measures, each line with the load average beside it:
 * - computed bytes: the weights a decode step reads, from the shapes — every attention, norm and
 *   router matrix, one embedding row, the (tied) unembedding, and per layer the MLP: all of it dense,
 *   the k chosen experts sparse (the chosen count is taken from the step's hook_expert_indices; the
 *   sum of all shapes is checked against the loaded weights' sizes); for --layers and for 30 layers;
 * - wall time per decode step (median of --decode − 1 steps after a prefill of --t tokens).
 *
 *   npx tsx bench/moe.ts [--layers 4] [--t 8] [--decode 8] [--backends cpu,webgpu]
 */
import * as os from 'node:os';
import type { Backend } from '../workers/engine/backend/backend';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { NodeFiles } from '../workers/engine/io/node_files';
import { loadTransformer } from '../workers/engine/model/load';
import { RunContext } from '../workers/engine/model/run_context';
import { weightTensors, type Transformer } from '../workers/engine/model/transformer';
import { nodeBackend } from '../tests/gpu/node_webgpu';
import { denseTwin, mixtralConfig, mixtralRandom } from './mixtral_random';

const args = process.argv.slice(2);
const flag = (name: string, def: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def; };
const LAYERS = Number(flag('layers', '4'));
const T = Number(flag('t', '8'));
const N_DECODE = Number(flag('decode', '8'));
const BACKENDS = flag('backends', 'cpu,webgpu').split(',');
for (const [k, v] of [['layers', LAYERS], ['t', T], ['decode', N_DECODE]] as const) if (!(Number.isInteger(v) && v >= (k === 'decode' ? 2 : 1))) throw new Error(`--${k} ${flag(k, '')}: expected a whole number ≥ ${k === 'decode' ? 2 : 1}`);
const unknown = BACKENDS.filter((b) => b !== 'cpu' && b !== 'webgpu');
if (unknown.length) throw new Error(`--backends: ${unknown.join(', ')} is not cpu or webgpu`);

const load = () => `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`;
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const MB = (b: number) => `${(b / 1e6).toFixed(1)} MB`;

const C = mixtralConfig(LAYERS);
const D = C.hidden_size, F = C.intermediate_size, E = C.num_local_experts, K = C.num_experts_per_tok, V = C.vocab_size;
const KV = C.num_key_value_heads * (D / C.num_attention_heads);

/** Float32 bytes a decode step reads over `layers` layers: `mlp(l)` = the MLP elements layer l reads. */
function stepBytes(layers: number, mlp: (l: number) => number, routers: boolean): number {
  const attention = 2 * D * D + 2 * KV * D + 2 * D; // q, o, k, v, two norms
  let n = D + V * D + D; // one embedding row, the tied unembedding, the final norm
  for (let l = 0; l < layers; l++) n += attention + (routers ? E * D : 0) + mlp(l);
  return 4 * n;
}

/** Float32 bytes of every weight the model holds (the tied embedding once). */
const heldBytes = (m: Transformer) => 4 * [...new Set(weightTensors(m.weights))].reduce((a, t) => a + t.size, 0);

async function measure(kind: string, dir: string, sparse: boolean): Promise<void> {
  const b: Backend = kind === 'cpu' ? new CpuBackend() : await nodeBackend();
  try {
    const { model } = await loadTransformer(new NodeFiles(dir), b, undefined, { contextLength: T + N_DECODE + 2 });
    const all = stepBytes(LAYERS, () => E * 3 * D * F, sparse) - 4 * D; // every weight once (the embedding row is the tied unembedding's)
    if (all !== heldBytes(model)) throw new Error(`shapes give ${all} bytes of weights, the load holds ${heldBytes(model)}`);
    const ids = Int32Array.from({ length: T }, (_, i) => 3 + ((i * 37) % 500));
    const hooks = Array.from({ length: LAYERS }, (_, l) => `blocks.${l}.mlp.hook_expert_indices`);
    const step = async (input: Int32Array, pos0: number, capture = false) => {
      const ctx = new RunContext(b, { pos0, n: input.length, nPrompt: T, step: pos0 === 0 ? 0 : pos0 - T + 1 }, capture ? (h) => hooks.includes(h) : undefined);
      const out = model.forward(input, ctx, 'last')!;
      const top = await b.topk(out, 1);
      const chosen: number[] = [];
      for (const h of capture ? hooks : []) chosen.push(new Set(await b.read(ctx.captured.get(h)!)).size);
      b.release(out);
      ctx.release();
      return { next: top.indices[0], chosen };
    };
    let { next } = await step(ids, 0);
    const times: number[] = [];
    let chosen: number[] = [];
    for (let s = 0; s < N_DECODE; s++) {
      const t0 = performance.now();
      next = (await step(Int32Array.of(next), T + s)).next;
      times.push(performance.now() - t0);
    }
    if (sparse) chosen = (await step(Int32Array.of(next), T + N_DECODE, true)).chosen;
    const mlp = (l: number) => (sparse ? chosen[l] : E) * 3 * D * F;
    const bytes = stepBytes(LAYERS, mlp, sparse);
    const bytes30 = stepBytes(30, () => (sparse ? K : E) * 3 * D * F, sparse);
    const label = sparse ? `MoE ${E}×${F} top-${K}` : `dense d_mlp ${E * F}`;
    console.log(`${kind.padEnd(6)} ${label.padEnd(20)} held ${MB(heldBytes(model)).padStart(9)}  read/step ${MB(bytes).padStart(9)} (30 layers: ${MB(bytes30).padStart(9)})  decode ${median(times.slice(1)).toFixed(1).padStart(8)} ms/step  ${load()}`);
    model.dispose();
  } finally {
    b.dispose();
  }
}

const moe = mixtralRandom(LAYERS), dense = denseTwin(LAYERS, E);
console.log(`Mixtral-shaped random model (d_model ${D}, ${E} experts × d_mlp ${F}, top ${K}) vs the dense Llama of the same parameters, ${LAYERS} of 30 layers, float32; prefill ${T}, median of ${N_DECODE - 1} decode steps`);
for (const kind of BACKENDS) {
  await measure(kind, moe, true);
  await measure(kind, dense, false);
}
process.exit(0);
