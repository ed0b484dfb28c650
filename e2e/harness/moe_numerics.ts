/**
 * The mixture-of-experts fixtures on WebGPU in the browser (../shared/fixtures-moe/README.md, served
 * under /fixtures-moe/): the sparse experts (ops/moe_experts.wgsl.ts, indirect dispatches) on
 * Chromium's SwiftShader. Per fixture and sequence: logits (≤ 1e-4) and router logits (≤ 1e-5)
 * against HF, logits against the CPU backend (≤ 1e-5 scaled by max(1, |z|)), and HF's greedy continuation fed through the
 * KV cache, each step's logits against generate_step_logits (≤ 1e-4). Exposes
 * `window.runMoeNumerics(tuning)` for moe_numerics.spec.ts.
 */
import type { Backend } from '../../workers/engine/backend/backend';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import type { KernelTuning } from '../../workers/engine/backend/webgpu_host';
import { HttpFiles } from '../../workers/engine/io/model_files';
import { decodeTensor, parseSafetensors } from '../../workers/engine/io/safetensors';
import { loadTransformer } from '../../workers/engine/model/load';
import { RunContext } from '../../workers/engine/model/run_context';
import type { Transformer } from '../../workers/engine/model/transformer';
import { diff } from './compare';
import type { NumericsRow } from './numerics';

declare global {
  interface Window { runMoeNumerics: (tuning?: KernelTuning) => Promise<{ adapter: string; tuning: KernelTuning; rows: NumericsRow[] }> }
}

const FIXTURES = ['mixtral', 'qwen2_moe', 'olmoe'];

async function reference(url: string): Promise<Map<string, Float32Array>> {
  const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
  const h = parseSafetensors(bytes, url);
  return new Map([...h.tensors].map(([n, e]) => [n, decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype)]));
}

/** One forward of `ids` at pos0 ('all' rows from 0, else the last row), capturing `hooks`. */
async function forward(b: Backend, m: Transformer, ids: number[], pos0: number, nPrompt: number, hooks: string[] = []): Promise<{ logits: Float32Array; captured: Map<string, Float32Array> }> {
  const ctx = new RunContext(b, { pos0, n: ids.length, nPrompt, step: pos0 === 0 ? 0 : pos0 - nPrompt + 1 }, (h) => hooks.includes(h));
  const t = m.forward(Int32Array.from(ids), ctx, pos0 === 0 ? 'all' : 'last')!;
  const logits = await b.read(t);
  b.release(t);
  const captured = new Map<string, Float32Array>();
  for (const [name, v] of ctx.captured) captured.set(name, await b.read(v));
  ctx.release();
  return { logits, captured };
}

window.runMoeNumerics = async (tuning?: KernelTuning) => {
  const b = await WebGpuBackend.create({ tuning });
  const cpu = new CpuBackend();
  const rows: NumericsRow[] = [];
  try {
    for (const arch of FIXTURES) {
      const base = `/fixtures-moe/${arch}-tiny/`, name = `${arch}-tiny`;
      const model = (await loadTransformer(new HttpFiles(name, base), b)).model;
      const onCpu = (await loadTransformer(new HttpFiles(name, base), cpu)).model;
      const sparse = model.spec.moe!.sparse.flatMap((s, l) => (s ? [l] : []));
      const hooks = sparse.map((l) => `blocks.${l}.mlp.hook_router_logits`);
      const meta = (await (await fetch(`${base}reference/meta.json`)).json()) as { sequences: { name: string; input_ids: number[]; generated_ids: number[] }[] };
      for (const s of meta.sequences) {
        const ref = await reference(`${base}reference/${s.name}.safetensors`);
        const run = await forward(b, model, s.input_ids, 0, s.input_ids.length, hooks);
        rows.push({ model: name, what: `${s.name}: logits vs HF`, maxAbs: diff(run.logits, ref.get('logits')!).maxAbs, tol: 1e-4 });
        const r = ref.get('router_logits')!, per = r.length / sparse.length;
        const worst = Math.max(...hooks.map((h, i) => diff(run.captured.get(h)!, r.subarray(i * per, (i + 1) * per)).maxAbs));
        rows.push({ model: name, what: `${s.name}: router logits (mlp.hook_router_logits) vs HF router_logits`, maxAbs: worst, tol: 1e-5 });
        // scaled (|Δ| / max(1, |z|)): the 'gpu' tuning's dense kernels sum in another order than the CPU's, ~1e-5 on logits of ~8
        rows.push({ model: name, what: `${s.name}: logits vs the CPU backend, |Δ| / max(1, |z|)`, maxAbs: diff(run.logits, (await forward(cpu, onCpu, s.input_ids, 0, s.input_ids.length)).logits).maxErr, tol: 1e-5 });
        const steps = ref.get('generate_step_logits')!, V = steps.length / s.generated_ids.length;
        let step = 0;
        let pos0 = 0, input = s.input_ids;
        for (let t = 0; t < s.generated_ids.length; t++) {
          const out = await forward(b, model, input, pos0, s.input_ids.length);
          const last = pos0 === 0 ? out.logits.subarray(out.logits.length - V) : out.logits;
          step = Math.max(step, diff(last, steps.subarray(t * V, (t + 1) * V)).maxAbs);
          pos0 += input.length;
          input = [s.generated_ids[t]];
        }
        rows.push({ model: name, what: `${s.name}: HF's continuation through the KV cache, step logits vs generate_step_logits`, maxAbs: step, tol: 1e-4 });
      }
      model.dispose(); onCpu.dispose();
    }
    return { adapter: b.description, tuning: b.tuning, rows };
  } finally {
    b.dispose(); cpu.dispose();
  }
};
