import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { doseResponse } from '../../workers/engine/studies/sweep';
import { actAdd, caaVector } from '../../workers/engine/studies/vectors';
import { readReference, sharedPath } from '../shared';
import { F32_TOL, logSoftmax, maxDiff, realModel } from '../reference_math';

/**
 * Steering vectors and the dose–response sweep against closed forms computed here from golden
 * arrays (DESIGN.md §3): ActAdd (Turner et al., arXiv 2308.10248) and CAA (Rimsky et al., arXiv
 * 2312.06681) from stories260K's reference residual streams; the per-head variant at attn.hook_z
 * from the reference attention probabilities and values (z_h = Σ_k A[h,·,k] v_{h // 2}[k], GQA);
 * the sweep's margin and KL(p_unsteered ‖ p_steered) from HF transformers' unsteered and steered
 * logits of the fixtures (steer_seq0: v added to the output of block 1 at every position).
 */
const m = realModel('stories260K');
const [A, B, C] = m.ref.prompts; // once_upon_a_time, lily_tom_ball, cat_was_very
const arr = new Map(m.ref.prompts.map((p) => [p.name, m.arrays(p)]));
/** h^l at position t of prompt p (l = 0: embeddings; l ≥ 1: resid_post of block l − 1). */
const h = (p: typeof A, l: number, t: number) => m.resid(arr.get(p.name)!, p, l, t);
const last = (p: typeof A) => p.n_prompt - 1;

let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(m.dir), new CpuBackend()); });
afterAll(() => e.dispose());

describe('ActAdd and CAA on stories260K from the reference residual streams', () => {
  it.each([0, 1, 2, 3, 4])('ActAdd at blocks.%i.hook_resid_post, last token: h⁺ − h⁻', async (l) => {
    const v = await actAdd(e, { positive: A.prompt, negative: C.prompt, hook: `blocks.${l}.hook_resid_post` });
    const want = Array.from(h(A, l + 1, last(A)), (x, i) => x - h(C, l + 1, last(C))[i]);
    expect(maxDiff(v.vector, want)).toBeLessThanOrEqual(F32_TOL);
  });

  it('ActAdd mean: the difference averaged over the aligned positions 0..min(T⁺, T⁻) − 1 (at hook_embed too)', async () => {
    const n = Math.min(A.n_prompt, B.n_prompt);
    for (const [hook, l] of [['hook_embed', 0], ['blocks.2.hook_resid_post', 3]] as const) {
      const v = await actAdd(e, { positive: B.prompt, negative: A.prompt, hook, position: 'mean' });
      const want = new Float64Array(m.D);
      for (let t = 0; t < n; t++) for (let i = 0; i < m.D; i++) want[i] += (h(B, l, t)[i] - h(A, l, t)[i]) / n;
      expect(maxDiff(v.vector, want)).toBeLessThanOrEqual(F32_TOL);
    }
  });

  it('CAA: mean over the positive texts − mean over the negative texts at the last token, and the dataset mean μ', async () => {
    const v = await caaVector(e, { positive: [A.prompt, B.prompt], negative: [C.prompt], hook: 'blocks.3.hook_resid_post' });
    const pos = Array.from({ length: m.D }, (_, i) => (h(A, 4, last(A))[i] + h(B, 4, last(B))[i]) / 2);
    const neg = Array.from(h(C, 4, last(C)));
    expect(maxDiff(v.vector, pos.map((x, i) => x - neg[i]))).toBeLessThanOrEqual(F32_TOL);
    expect(maxDiff(v.mean, pos.map((x, i) => (2 * x + neg[i]) / 3))).toBeLessThanOrEqual(F32_TOL);
  });

  it('per-head ActAdd at blocks.1.attn.hook_z, head 3: z₃ = Σ_k A[3, last, k] · v_{kv 1}[k] of each prompt, differenced', async () => {
    const l = 1, head = 3, kv = Math.floor(head / (m.H / m.KV));
    const z = (p: typeof A) => {
      const out = new Float64Array(m.dHead);
      for (let k = 0; k <= last(p); k++) {
        const a = m.attn(arr.get(p.name)!, p, l, head, last(p), k);
        const v = m.value(arr.get(p.name)!, p, l, k);
        for (let d = 0; d < m.dHead; d++) out[d] += a * v[kv * m.dHead + d];
      }
      return out;
    };
    const got = await actAdd(e, { positive: A.prompt, negative: C.prompt, hook: `blocks.${l}.attn.hook_z`, head });
    const za = z(A), zc = z(C);
    expect(got.vector).toHaveLength(m.dHead);
    expect(maxDiff(got.vector, Array.from(za, (x, d) => x - zc[d]))).toBeLessThanOrEqual(F32_TOL);
  });
});

describe.each(['llama', 'gpt2', 'gemma2'])('dose–response on the %s-tiny fixture against HF\'s steered forward', (arch) => {
  const dir = sharedPath('fixtures', `${arch}-tiny`);
  const seq0 = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')).sequences[0] as { text: string; input_ids: number[] };
  const plain = readReference(`${dir}/reference/seq0.safetensors`).get('logits')!;
  const steer = readReference(`${dir}/reference/steer_seq0.safetensors`);
  const V = plain.shape[1], S = plain.shape[0];
  const lpPlain = logSoftmax(plain.data.subarray((S - 1) * V));
  const lpSteer = logSoftmax(steer.get('logits')!.data.subarray((S - 1) * V));
  let fx: Engine;
  beforeAll(async () => { fx = await Engine.load(new NodeFiles(dir), new CpuBackend()); });
  afterAll(() => fx.dispose());

  it('dose 1 at block 1: margin = Δ of the steered reference, KL = Σ p (log p − log q) of the two reference rows; dose 0: KL 0', async () => {
    const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => lpPlain[b] - lpPlain[a]);
    const [good, bad] = [order[0], order[1]];
    const r = await doseResponse(fx, {
      prompt: seq0.text, good: { ids: [[good]] }, bad: { ids: [[bad]] },
      template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: Array.from(steer.get('steering_vector')!.data) }, layers: [1], doses: [0, 1],
    });
    expect(fx.encodePrompt({ prompt: seq0.text })).toEqual(seq0.input_ids);
    let kl = 0;
    for (let i = 0; i < V; i++) kl += Math.exp(lpPlain[i]) * (lpPlain[i] - lpSteer[i]);
    expect(kl).toBeGreaterThan(1e-3); // the reference steering really moves the distribution
    expect(Math.abs(r.unsteeredMargin - (lpPlain[good] - lpPlain[bad]))).toBeLessThanOrEqual(F32_TOL);
    expect(Math.abs(r.margin[0][0] - (lpPlain[good] - lpPlain[bad]))).toBeLessThanOrEqual(F32_TOL);
    expect(Math.abs(r.margin[0][1] - (lpSteer[good] - lpSteer[bad]))).toBeLessThanOrEqual(F32_TOL);
    expect(r.kl[0][0]).toBe(0);
    expect(Math.abs(r.kl[0][1] - kl)).toBeLessThanOrEqual(F32_TOL);
  });
});
