import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { RunContext } from '../../workers/engine/model/run_context';
import type { Transformer } from '../../workers/engine/model/transformer';
import { hookNames } from '../../workers/engine/model/hooks';
import { maxAbsDiff, readReference } from '../shared';
import { differenceTable, fixtureMeta, fixtures, hiddenStateHooks } from '../fixture_walk';
import { argmax, runCaptured } from '../model_run';

/**
 * The mixture-of-experts families against Hugging Face transformers' own outputs on tiny seeded
 * models (../shared/fixtures-moe/README.md): logits (≤ 1e-4) and router logits (≤ 1e-5) at every
 * position of the three sequences, hidden states, attention patterns, the KV-cache decode of HF's
 * greedy continuation, and the steering hook, on the CPU backend.
 *
 * Greedy ids: HF's generated ids are fed back through the KV cache (teacher-forced), every step's
 * logits are compared with generate's within 1e-4, and the step's argmax with HF's id only where
 * the reference top-1 − top-2 margin exceeds 1e-3 (ID_MARGIN, 10× the logit tolerance) — an engine
 * within tolerance could pick the other token near a tie. mixtral-tiny seq1 has such a near tie (margin 2.8e-4 at one step,
 * README "min greedy margin 0.000"): that step's id is not compared, its logits are.
 */

const TOL = 1e-4;
const ROUTER_TOL = 1e-5;
/** Reference top-1 − top-2 margin below which a step's id is not compared (10× the logit tolerance). */
const ID_MARGIN = 1e-3;

const record = differenceTable();

/** Top-1 − top-2 of a row. */
function margin(row: ArrayLike<number>): number {
  let a = -Infinity, b = -Infinity;
  for (let i = 0; i < row.length; i++) {
    const x = row[i];
    if (x > a) { b = a; a = x; } else if (x > b) b = x;
  }
  return a - b;
}

describe.each(fixtures(['fixtures-moe']).map((f) => [f.arch, f.dir]))('%s-tiny', (arch, dir) => {
  const meta = fixtureMeta(dir);
  const L = meta.n_layers;
  const b = new CpuBackend();
  let model: Transformer;
  let sparseLayers: number[];
  beforeAll(async () => {
    model = (await loadTransformer(new NodeFiles(dir), b)).model;
    sparseLayers = Array.from({ length: L }, (_, l) => l).filter((l) => model.spec.moe!.sparse[l]);
  });
  afterAll(() => b.dispose());

  const hsHooks = hiddenStateHooks(L);
  const patternHooks = Array.from({ length: L }, (_, l) => `blocks.${l}.attn.hook_pattern`);
  const lastBlock = `blocks.${L - 1}.hook_resid_post`;

  it('declares the router hooks exactly on the sparse layers (qwen2_moe: layer 1 is dense)', () => {
    const names = hookNames(model.spec);
    for (let l = 0; l < L; l++) {
      const sparse = model.spec.moe!.sparse[l];
      for (const h of ['hook_router_logits', 'hook_expert_indices', 'hook_expert_weights']) expect(names.includes(`blocks.${l}.mlp.${h}`)).toBe(sparse);
      expect(names.includes(`blocks.${l}.mlp.hook_post`)).toBe(!sparse);
    }
    expect(sparseLayers).toEqual(arch === 'qwen2_moe' ? [0, 2] : [0, 1, 2]);
  });

  for (const seq of meta.sequences) {
    it(`${seq.name}: logits ≤ 1e-4, router_logits ≤ 1e-5, hidden states and attention patterns match HF`, async () => {
      const ref = readReference(`${dir}/reference/${seq.name}.safetensors`);
      const routerHooks = sparseLayers.flatMap((l) => [`blocks.${l}.mlp.hook_router_logits`, `blocks.${l}.mlp.hook_expert_indices`, `blocks.${l}.mlp.hook_expert_weights`]);
      const { logits, captured } = await runCaptured(b, model, seq.input_ids, [...hsHooks, lastBlock, ...patternHooks, ...routerHooks]);
      expect(record(arch, 'logits', maxAbsDiff(logits, ref.get('logits')!.data))).toBeLessThanOrEqual(TOL);
      const rl = ref.get('router_logits')!;
      expect(rl.shape[0]).toBe(sparseLayers.length);
      const per = rl.data.length / sparseLayers.length;
      const routerDiff = Math.max(...sparseLayers.map((l, i) => maxAbsDiff(captured.get(`blocks.${l}.mlp.hook_router_logits`)!, rl.data.subarray(i * per, (i + 1) * per))));
      expect(record(arch, 'router_logits', routerDiff)).toBeLessThanOrEqual(ROUTER_TOL);
      const hs = ref.get('hidden_states')!.data, hper = hs.length / (L + 1);
      const hDiff = Math.max(...hsHooks.map((h, i) => maxAbsDiff(captured.get(h)!, hs.subarray(i * hper, (i + 1) * hper))));
      expect(record(arch, 'hidden_states', hDiff)).toBeLessThanOrEqual(TOL);
      expect(record(arch, 'resid_post_last', maxAbsDiff(captured.get(lastBlock)!, ref.get('resid_post_last_block')!.data))).toBeLessThanOrEqual(TOL);
      const att = ref.get('attentions')!.data, aper = att.length / L;
      expect(record(arch, 'attentions', Math.max(...patternHooks.map((h, l) => maxAbsDiff(captured.get(h)!, att.subarray(l * aper, (l + 1) * aper)))))).toBeLessThanOrEqual(TOL);
      // the router hooks agree with each other: indices = top-k of softmax(router_logits), weights = their p (renormalised: sum 1)
      const { nExperts: E, topK: k, normTopk } = model.spec.moe!;
      for (const l of sparseLayers) {
        const lg = captured.get(`blocks.${l}.mlp.hook_router_logits`)!, ix = captured.get(`blocks.${l}.mlp.hook_expert_indices`)!, wt = captured.get(`blocks.${l}.mlp.hook_expert_weights`)!;
        expect(ix.length).toBe(seq.input_ids.length * k);
        for (let r = 0; r < seq.input_ids.length; r++) {
          const row = Array.from(lg.subarray(r * E, (r + 1) * E));
          const order = row.map((_, e) => e).sort((a, c) => row[c] - row[a]);
          expect(Array.from(ix.subarray(r * k, (r + 1) * k))).toEqual(order.slice(0, k));
          const z = row.reduce((s, x) => s + Math.exp(x), 0);
          const p = order.slice(0, k).map((e) => Math.exp(row[e]) / z);
          const ps = p.reduce((s, x) => s + x, 0);
          p.forEach((pj, j) => expect(wt[r * k + j]).toBeCloseTo(normTopk ? pj / ps : pj, 6));
        }
      }
    });

    it(`${seq.name}: HF's greedy continuation through the KV cache: step logits ≤ 1e-4, ids where the margin allows, equal to the full forward`, async () => {
      const ref = readReference(`${dir}/reference/${seq.name}.safetensors`).get('generate_step_logits')!;
      const [nNew, V] = ref.shape;
      let input = Int32Array.from(seq.input_ids);
      let pos0 = 0, worst = 0, skipped = 0;
      const steps: Float32Array[] = [];
      for (let step = 0; step < nNew; step++) {
        const ctx = new RunContext(b, { pos0, n: input.length, nPrompt: seq.input_ids.length, step });
        const t = model.forward(input, ctx, 'last')!;
        const row = await b.read(t);
        b.release(t); ctx.release();
        steps.push(row);
        const refRow = ref.data.subarray(step * V, (step + 1) * V);
        worst = Math.max(worst, maxAbsDiff(row, refRow));
        if (margin(refRow) > ID_MARGIN) expect(argmax(row), `step ${step}`).toBe(seq.generated_ids[step]);
        else skipped++;
        pos0 += input.length;
        input = Int32Array.of(seq.generated_ids[step]);
      }
      expect(record(arch, 'step_logits', worst)).toBeLessThanOrEqual(TOL);
      if (arch === 'mixtral' && seq.name === 'seq1') expect(skipped).toBeGreaterThanOrEqual(1); // the README's 2.8e-4 near tie
      // KV-cache decode = one full forward over prompt + generated
      const all = [...seq.input_ids, ...seq.generated_ids.slice(0, nNew - 1)];
      const { logits } = await runCaptured(b, model, all, []);
      const S = seq.input_ids.length;
      const full = Math.max(...steps.map((row, t) => maxAbsDiff(row, logits.subarray((S - 1 + t) * V, (S + t) * V))));
      expect(record(arch, 'cache_vs_full', full)).toBeLessThanOrEqual(1e-5);
    });
  }

  it('steer_seq0: add(α=1, steering_vector) at blocks.1.hook_resid_post matches the hooked HF forward', async () => {
    const ref = readReference(`${dir}/reference/steer_seq0.safetensors`);
    const { logits } = await runCaptured(b, model, meta.sequences[0].input_ids, [], [
      { hook: 'blocks.1.hook_resid_post', op: { kind: 'add', v: ref.get('steering_vector')!.data, alpha: 1 }, positions: 'all' },
    ]);
    expect(record(arch, 'steer_logits', maxAbsDiff(logits, ref.get('logits')!.data))).toBeLessThanOrEqual(TOL);
  });
});
