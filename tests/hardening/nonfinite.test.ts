import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NonFiniteError } from '../../workers/engine/model/non_finite';
import { sampleToken } from '../../workers/engine/analysis/sampling';
import { rowOpCpu } from '../../workers/engine/ops/row_op.cpu';
import { toIntervention } from '../../workers/engine/steering/spec';
import { memory, withTensors } from './model_variants';

/**
 * Issue #8 fault 2: non-finite values never reach the user as results. NaN/Inf weights and f16
 * overflow are refused at load naming the tensor; a run whose logits go non-finite is refused naming
 * the hook, layer and position where the first NaN/Inf appeared; sampling never turns NaN into a token.
 */
const req = { prompt: 'Once upon a time there was a girl', good: { text: ' who' }, bad: { text: ' and' } };

describe('non-finite weights and f16 range at load', () => {
  it('a NaN weight is refused, naming the tensor, the index and the value', async () => {
    const files = withTensors((ts) => { ts.find((t) => t.name === 'model.layers.2.mlp.down_proj.weight')!.data[7] = NaN; });
    await expect(Engine.load(memory(files), new CpuBackend())).rejects.toThrow(/tensor "model\.layers\.2\.mlp\.down_proj\.weight" holds NaN at index 7/);
  });
  it('an Inf weight is refused the same way', async () => {
    const files = withTensors((ts) => { ts.find((t) => t.name === 'model.norm.weight')!.data[3] = -Infinity; });
    await expect(Engine.load(memory(files), new CpuBackend())).rejects.toThrow(/"model\.norm\.weight" holds -Infinity at index 3/);
  });
  it('f16 storage of a value above 65504 is refused, naming the tensor (float32 storage of the same file loads)', async () => {
    const files = withTensors((ts) => { ts.find((t) => t.name === 'model.layers.0.self_attn.q_proj.weight')!.data[5] = 70000; });
    await expect(Engine.load(memory(files), new CpuBackend(), undefined, { weightDtype: 'f16' })).rejects.toThrow(/"model\.layers\.0\.self_attn\.q_proj\.weight" holds 70000 at index 5, beyond the binary16 range ±65504/);
    const e = await Engine.load(memory(files), new CpuBackend());
    expect(e.spec.nLayers).toBe(5);
    e.dispose();
  });
});

describe('non-finite activations at run time', () => {
  it('a dose that overflows float32 (add, α = 1e39) is an error naming the hook and layer, in analyse and generate', async () => {
    const e = await Engine.load(memory(withTensors(() => {})), new CpuBackend());
    const T = e.encodePrompt(req).length;
    const v = Array.from({ length: 64 }, (_, i) => (i === 3 ? 1 : 0));
    const iv = toIntervention({ hook: 'blocks.2.hook_resid_post', type: 'add', vector: v, alpha: 1e39, positions: [4] }, e.spec, { nPrompt: T });
    const err = await e.analyse({ ...req, interventions: [iv] }).catch((x) => x);
    expect(err).toBeInstanceOf(NonFiniteError);
    expect(err.message).toMatch(/appears at blocks\.2\.hook_resid_post \(layer 2\), position 4/);
    expect(err.site).toMatchObject({ hook: 'blocks.2.hook_resid_post', layer: 2, position: 4, value: Infinity });
    await expect(e.generate({ ...req, maxNewTokens: 3, interventions: [iv] })).rejects.toThrow(/blocks\.2\.hook_resid_post \(layer 2\)/);
    // the same vector at a finite dose runs
    const ok = toIntervention({ hook: 'blocks.2.hook_resid_post', type: 'add', vector: v, alpha: 3, positions: [4] }, e.spec, { nPrompt: T });
    expect(Number.isFinite((await e.analyse({ ...req, interventions: [ok] })).sequenceMargin)).toBe(true);
    e.dispose();
  });
  it('a finite weight large enough to overflow an activation is located at the first hook that overflows', async () => {
    const files = withTensors((ts) => { ts.find((t) => t.name === 'model.layers.1.mlp.down_proj.weight')!.data.fill(3e38); });
    const e = await Engine.load(memory(files), new CpuBackend());
    const err = await e.analyse(req).catch((x) => x);
    expect(err).toBeInstanceOf(NonFiniteError);
    expect(err.site.hook).toBe('blocks.1.hook_mlp_out');
    expect(err.site.position).toBe(0);
    await expect(e.run(e.encodePrompt(req))).rejects.toThrow(/blocks\.1\.hook_mlp_out \(layer 1\), position 0/);
    e.dispose();
  });
});

describe('sampling', () => {
  const rand = () => 0.5;
  it('refuses NaN log-probs instead of returning token 0 (greedy and sampled)', () => {
    const lp = Float32Array.from([NaN, NaN, NaN]);
    expect(() => sampleToken(lp, 0, 0, rand)).toThrow(/log-prob of token 0 is NaN/);
    expect(() => sampleToken(Float32Array.from([-1, NaN, -2]), 0.7, 0, rand)).toThrow(/token 1 is NaN/);
  });
  it('refuses a temperature or top-k that is not a number', () => {
    const lp = Float32Array.from([-1, -2]);
    expect(() => sampleToken(lp, Number('abc'), 0, rand)).toThrow(/temperature must be a finite number ≥ 0 .*not NaN/);
    expect(() => sampleToken(lp, -1, 0, rand)).toThrow(/temperature/);
    expect(() => sampleToken(lp, 1, 2.5, rand)).toThrow(/top-k must be a whole number ≥ 0 .*not 2\.5/);
    expect(sampleToken(lp, 0, 0, rand)).toBe(0);
  });
});

describe('add_norm_preserving with huge doses (scale before squaring, CPU reference)', () => {
  it('α = ±1e39 gives ±‖h‖·v̂ (the closed-form limit), not 0', () => {
    const h = Float32Array.from([3, 4, 0, 0]); // ‖h‖ = 5
    const v = Float32Array.from([0, 0, 2, 0]); // v̂ = e3
    for (const [alpha, sign] of [[1e39, 1], [-1e300, -1]]) {
      const y = rowOpCpu(h, 4, { kind: 'add_norm_preserving', v, alpha }, Uint8Array.of(1));
      expect(Array.from(y)).toEqual([0, 0, 5 * sign, 0].map((x, i) => (i < 2 ? expect.closeTo(0, 6) : x)));
    }
    const y = rowOpCpu(h, 4, { kind: 'add_norm_preserving', v, alpha: 1.5 }, Uint8Array.of(1)); // h + 1.5v = [3,4,3,0], ‖·‖ = √34
    const f = 5 / Math.sqrt(34);
    expect(Array.from(y).map((x) => +x.toFixed(5))).toEqual([3 * f, 4 * f, 3 * f, 0].map((x) => +x.toFixed(5)));
  });
});
