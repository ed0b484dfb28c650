import { describe, expect, it } from 'vitest';
import type { Backend, FusedOps, LinearFusion, QkvFusion } from '../../workers/engine/backend/backend';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { RunContext } from '../../workers/engine/model/run_context';
import { Transformer } from '../../workers/engine/model/transformer';
import { sharedPath } from '../shared';

/**
 * The block takes the fused kernels its FusionPlan names and no others, and they change no value:
 * on the CPU backend given FusedOps written as the op chains they replace (backend.ts LinearFusion
 * and QkvFusion docstrings), a decode step with no hook touched calls, per layer, the kernels the
 * wiring allows (Llama: q/k/v, W_O + residual, act(gate)·up, W_down + residual, ln1/ln2 folded),
 * and its logits equal the plain CPU ops' to float32 rounding. (WebGPU's own kernels:
 * e2e/harness/numerics.spec.ts.)
 */
function withFakeFused(cpu: CpuBackend, calls: string[]): Backend {
  const fused: FusedOps = {
    maxRows: 4, foldsNorm: true,
    linear(x, w, bias, f: LinearFusion) {
      calls.push(`linear${f.norm ? '+norm' : ''}${f.gateUp ? '+gateUp' : ''}${f.residual ? '+residual' : ''}`);
      const xn = f.norm ? cpu.rmsNorm(x, f.norm.w, f.norm.eps, f.norm.offset) : x;
      let y = cpu.linear(xn, w, bias);
      if (f.gateUp) { const u = cpu.linear(xn, f.gateUp.w, f.gateUp.bias); const g = cpu.gatedAct(y, u, f.gateUp.act); cpu.release(y); cpu.release(u); y = g; }
      if (f.residual) { const r = cpu.add(y, f.residual); cpu.release(y); y = r; }
      if (f.norm) cpu.release(xn);
      return y;
    },
    qkv(f: QkvFusion) {
      calls.push(`qkv${f.norm ? '+norm' : ''}`);
      const xn = f.norm ? cpu.rmsNorm(f.x, f.norm.w, f.norm.eps, f.norm.offset) : f.x;
      let q = cpu.linear(xn, f.q.w, f.q.b), k = cpu.linear(xn, f.k.w, f.k.b);
      const v = cpu.linear(xn, f.v.w, f.v.b);
      if (f.rope) {
        const q2 = cpu.rope(q, f.nHeads, f.headDim, f.rope.rotaryDims, f.pos0, f.rope.invFreq), k2 = cpu.rope(k, f.nKvHeads, f.headDim, f.rope.rotaryDims, f.pos0, f.rope.invFreq);
        cpu.release(q); cpu.release(k); q = q2; k = k2;
      }
      cpu.writeRows(f.kCache, k, f.pos0); cpu.writeRows(f.vCache, v, f.pos0);
      cpu.release(k); cpu.release(v);
      if (f.norm) cpu.release(xn);
      return q;
    },
  };
  return new Proxy(cpu, { get: (t, p) => (p === 'fused' ? fused : typeof (t as never)[p] === 'function' ? ((t as never)[p] as (...a: unknown[]) => unknown).bind(t) : (t as never)[p]) }) as unknown as Backend;
}

const PER_LAYER: Record<string, string[]> = {
  llama: ['qkv+norm', 'linear+residual', 'linear+norm+gateUp', 'linear+residual'],
  gemma2: ['qkv+norm', 'linear+norm+gateUp'], // sandwich norms: no residual epilogues
  qwen3: ['linear+norm', 'linear+norm', 'linear+norm', 'linear+residual', 'linear+norm+gateUp', 'linear+residual'], // QK-norm: split q/k/v, ln1 still folded
  gpt2: ['qkv', 'linear+residual', 'linear+residual'], // LayerNorm never folds; ungated MLP
  gpt_neox: ['qkv'], // parallel residual: no residual epilogues
};

describe('fused block on the CPU backend', () => {
  it.each(Object.keys(PER_LAYER))('%s-tiny: a decode step calls the planned fused kernels per layer and matches the unfused ops', async (fixture) => {
    const cpu = new CpuBackend();
    const { model } = await loadTransformer(new NodeFiles(sharedPath('fixtures', `${fixture}-tiny`)), cpu, undefined, { contextLength: 8 });
    const calls: string[] = [];
    const fusedModel = new Transformer(withFakeFused(cpu, calls), model.spec, model.weights, 8);
    const logits: Float32Array[] = [];
    for (const m of [model, fusedModel]) {
      const prompt = new RunContext(m.backend, { pos0: 0, n: 5, nPrompt: 5, step: 0 });
      m.forward(Int32Array.from([1, 5, 9, 3, 7]), prompt, 'none'); // 5 rows > maxRows: unfused
      calls.length = 0;
      const out = m.forward(Int32Array.from([11]), new RunContext(m.backend, { pos0: 5, n: 1, nPrompt: 5, step: 1 }), 'all')!;
      logits.push(await cpu.read(out));
      cpu.release(out);
    }
    expect(calls).toEqual(Array.from({ length: model.spec.nLayers }, () => PER_LAYER[fixture]).flat());
    const scale = Math.max(...logits[0].map(Math.abs));
    expect(Math.max(...logits[1].map((x, i) => Math.abs(x - logits[0][i]))) / scale).toBeLessThan(1e-5);
    fusedModel.dispose(); model.dispose(); cpu.dispose();
  });
});
