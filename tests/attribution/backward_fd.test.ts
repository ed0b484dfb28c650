import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import type { Transformer } from '../../workers/engine/model/transformer';
import { backward, objectiveGrad, type Objective } from '../../workers/engine/model/backward';
import type { Intervention } from '../../workers/engine/model/intervention';
import { sharedPath } from '../shared';
import { runCaptured } from '../model_run';

/**
 * The backward pass on every architecture family against central finite differences of the
 * engine's own forward on its tiny HF fixture (shared/fixtures): for a few hooks h, the directional
 * derivative along a seeded random unit direction v over the whole hook tensor,
 *   (m(h + εv) − m(h − εv)) / 2ε  vs  ∇_h m · v,   ε = 1e-2,
 * with h ± εv patched in at the hook. Tolerance from float32: the forward computes m with a rounding
 * error δ ≲ 2·√(n_ops)·u·max|logit| ≈ 2·30·6e-8·5 ≈ 2e-5 (u = 2⁻²⁴; rounding errors of the
 * ~10³ float32 operations on a path add like a random walk; logits ≤ 5), so the central difference
 * carries ≲ 2δ/2ε = 2e-3 of rounding, plus the truncation ε²·|m'''|/6, allowed 2e-3·|g·v| (an
 * assumption, m''' ≲ 100·|m'|, that the measured errors bear out): |FD − g·v| ≤ 2e-3 + 2e-3·|g·v|.
 * Measured (table printed): ≤ 1.2e-3. Re-planting the soft-capping factor dropped from the attention
 * backward fails gemma2 (|Δ| 8.7e-3 at hook_embed); LayerNorm without its x̂·mean(ĝ·x̂) term fails gpt2.
 * Covers LayerNorm + GELU + learned positions (gpt2), parallel residual + partial rotary (gpt_neox),
 * soft-capping + sliding window + sandwich norms + (1+w) RMSNorm (gemma2), sliding window (mistral),
 * QK-norm (qwen3), GQA (all but gpt2), llama3 RoPE scaling, phi3, qwen2 biases.
 */
const FIXTURES = ['gpt2', 'gpt_neox', 'llama', 'llama3', 'mistral', 'qwen2', 'qwen3', 'gemma2', 'phi3'];
const EPS = 1e-2;
const tol = (g: number) => 2e-3 + 2e-3 * Math.abs(g);

/** Seeded N(0, 1) values (mulberry32 + Box–Muller), scaled to a unit vector. */
function direction(n: number, seed: number): Float32Array {
  let a = seed >>> 0;
  const u = () => { a = (a + 0x6d2b79f5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296 + 1e-12; };
  const v = Float32Array.from({ length: n }, () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()));
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

const measured: Record<string, string> = {};
afterAll(() => console.table(measured));

describe.each(FIXTURES)('%s-tiny: gradients against central finite differences', (arch) => {
  const dir = sharedPath('fixtures', `${arch}-tiny`);
  const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { input_ids: number[] }[]; n_layers: number };
  const ids = meta.sequences[0].input_ids;
  const b = new CpuBackend();
  let model: Transformer;
  beforeAll(async () => { model = (await loadTransformer(new NodeFiles(dir), b)).model; });
  afterAll(() => b.dispose());

  const value = async (obj: Objective, interventions: Intervention[]): Promise<number> => {
    const { logits } = await runCaptured(b, model, ids, [], interventions);
    return objectiveGrad(logits, ids.length, model.spec.dVocab, obj).value;
  };

  const check = async (obj: Objective, hooks: string[]) => {
    const g = await backward(model, ids, obj);
    let worst = 0;
    for (const [k, hook] of hooks.entries()) {
      const { captured } = await runCaptured(b, model, ids, [hook]);
      const h = captured.get(hook)!;
      const v = direction(h.length, 1000 + k);
      const grad = g.grads.get(hook)!;
      let gv = 0;
      for (let i = 0; i < h.length; i++) gv += grad[i] * v[i];
      const at = (s: number): Intervention[] => [{ hook, positions: 'all', op: { kind: 'patch', replacement: Float32Array.from(h, (x, i) => x + s * EPS * v[i]) } }];
      const fd = ((await value(obj, at(1))) - (await value(obj, at(-1)))) / (2 * EPS);
      expect(Math.abs(fd - gv), `${hook}: FD ${fd} vs g·v ${gv}`).toBeLessThanOrEqual(tol(gv));
      worst = Math.max(worst, Math.abs(fd - gv));
    }
    return worst;
  };

  it('the margin between the top two tokens at the last position, at eight hooks', async () => {
    const L = meta.n_layers;
    const { logits } = await runCaptured(b, model, ids, []);
    const V = model.spec.dVocab, last = logits.subarray((ids.length - 1) * V);
    const order = Array.from({ length: V }, (_, i) => i).sort((x, y) => last[y] - last[x]);
    const hooks = ['hook_embed', 'blocks.0.attn.hook_k', 'blocks.0.attn.hook_v', 'blocks.1.attn.hook_z', 'blocks.1.hook_attn_out', 'blocks.0.hook_mlp_out', 'blocks.0.mlp.hook_pre', `blocks.${L - 1}.hook_resid_pre`];
    const worst = await check({ kind: 'margin', good: [order[0]], bad: [order[1], order[2]] }, hooks);
    measured[`${arch} margin`] = worst.toExponential(2);
  }, 60_000);

  it('the log-prob of a teacher-forced span', async () => {
    const positions = [ids.length - 4, ids.length - 3, ids.length - 2];
    const worst = await check({ kind: 'logprob', positions, targets: positions.map((p) => ids[p + 1]) }, ['hook_embed', 'blocks.1.hook_resid_pre']);
    measured[`${arch} logprob`] = worst.toExponential(2);
  }, 60_000);
});
