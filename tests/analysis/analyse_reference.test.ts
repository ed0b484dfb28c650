import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { sinkDivergence } from '../../workers/engine/analysis/sinks';
import type { Analysis } from '../../workers/engine/api';
import type { LensTop } from '../../workers/engine/model/lens';
import { F32_TOL, l2, logSoftmax, lse, maxDiff, realModel, topK, type RealModel, type RealPrompt } from '../reference_math';

/**
 * Every number Engine.analyse puts on screen, for every prompt of both real models, against a
 * closed form computed here from the golden arrays (../shared/models/<model>/reference: a float64
 * numpy forward cross-checked with llama2.c and HF transformers). Definitions: DESIGN.md §3.
 * The arrays cover the prompt plus 31 generated tokens; attention is causal, so their first
 * n_prompt positions are exactly the prompt-only run the engine analyses.
 * Tolerance: F32_TOL (1e-4, the reference README's bound for a correct float32 forward).
 */

/**
 * Futures built from the reference so every margin has a closed form: good = {the 4-token greedy
 * continuation, the 2nd most likely first token}, bad = {3rd, 4th most likely first tokens}.
 */
function futures(p: RealPrompt & { last_prompt_position_top5: { id: number }[] }) {
  const top = p.last_prompt_position_top5.map((x) => x.id).filter((id) => id !== p.greedy_ids[0]);
  return { good: { ids: [p.greedy_ids.slice(0, 4), [top[0]]] }, bad: { ids: [[top[1]], [top[2]]] }, goodFirst: [p.greedy_ids[0], top[0]], badFirst: [top[1], top[2]] };
}

describe.each(['stories260K', 'aidreams260K'] as const)('%s: Engine.analyse against the golden arrays', (name) => {
  const m: RealModel = realModel(name);
  let e: Engine;
  const runs = new Map<string, Analysis>();
  /** Lens top-5 of every cell, asked on demand (Engine.lensTop) right after each analysis. */
  const tops = new Map<string, LensTop[]>();
  beforeAll(async () => {
    e = await Engine.load(new NodeFiles(m.dir), new CpuBackend());
    for (const p of m.ref.prompts) {
      const f = futures(p as never);
      const a = await e.analyse({ prompt: p.prompt, good: f.good, bad: f.bad });
      runs.set(p.name, a);
      const cells: LensTop[] = [];
      for (let l = 0; l <= a.nLayers; l++) for (let t = 0; t < a.ids.length; t++) cells.push(await e.lensTop(a.lensHandle, l, t, 5));
      tops.set(p.name, cells);
    }
  });
  afterAll(() => e.dispose());

  describe.each(m.ref.prompts.map((p) => [p.name, p] as const))('%s', (_, p) => {
    const T = p.n_prompt;
    const a = () => runs.get(p.name)!;
    const arrays = m.arrays(p);

    it('reads the prompt as the reference ids', () => {
      expect(a().ids).toEqual(p.input_ids);
    });

    it('lens margin Δ^l_t (token sets, logsumexp of members) at every layer 0..L and position, and the final-layer row', () => {
      const f = futures(p as never);
      const expected = new Float64Array((m.L + 1) * T);
      for (let l = 0; l <= m.L; l++) {
        for (let t = 0; t < T; t++) {
          const lp = m.lens(m.resid(arrays, p, l, t));
          expected[l * T + t] = lse(f.goodFirst.map((i) => lp[i])) - lse(f.badFirst.map((i) => lp[i]));
        }
      }
      expect(maxDiff(a().lensMargin, expected)).toBeLessThanOrEqual(F32_TOL);
      expect(maxDiff(a().finalMargin, expected.subarray(m.L * T))).toBeLessThanOrEqual(F32_TOL);
    });

    it('lens top-5 ids and their log-probs (log_softmax, not raw logits) in every cell, on demand', () => {
      const k = 5;
      let worst = 0;
      for (let l = 0; l <= m.L; l++) {
        for (let t = 0; t < T; t++) {
          const lp = m.lens(m.resid(arrays, p, l, t));
          const want = topK(lp, k);
          const top = tops.get(p.name)![l * T + t];
          const ids = Array.from(top.ids);
          const vals = top.logProbs;
          // Ids must agree except where two candidates are closer than the tolerance (a legitimate swap).
          ids.forEach((id, j) => { if (id !== want.ids[j]) expect(Math.abs(lp[id] - want.values[j])).toBeLessThanOrEqual(F32_TOL); });
          worst = Math.max(worst, maxDiff(vals, want.values));
          for (const v of vals) expect(v).toBeLessThanOrEqual(0);
        }
      }
      expect(worst).toBeLessThanOrEqual(F32_TOL);
    });

    it('teacher-forced sequence margin: lse over each future\'s sequences of Σ_j log p(s_j | prompt, s_<j), every token counted', () => {
      const f = futures(p as never);
      const logits = arrays.get('logits')!.data;
      const lpAt = (j: number) => logSoftmax(logits.subarray((T - 1 + j) * m.V, (T + j) * m.V)); // row T-1+j predicts token T+j
      const seqLogProb = (s: number[]) => s.reduce((acc, id, j) => acc + lpAt(j)[id], 0);
      const expected = lse(f.good.ids.map(seqLogProb)) - lse(f.bad.ids.map(seqLogProb));
      expect(Math.abs(a().sequenceMargin - expected)).toBeLessThanOrEqual(F32_TOL);
    });

    it('residual norms ‖h^l_t‖₂ (L2, not RMS) for every layer and position', () => {
      const expected = new Float64Array((m.L + 1) * T);
      for (let l = 0; l <= m.L; l++) for (let t = 0; t < T; t++) expected[l * T + t] = l2(m.resid(arrays, p, l, t));
      expect(maxDiff(a().residNorms, expected)).toBeLessThanOrEqual(F32_TOL);
    });

    it('massive activations per layer: largest |h| with its token and dimension, and its ratio to the median |h|', () => {
      const mv = a().massive;
      for (let l = 0; l <= m.L; l++) {
        const mags: number[] = [];
        let best = -1, bt = -1, bd = -1;
        for (let t = 0; t < T; t++) {
          const h = m.resid(arrays, p, l, t);
          for (let d = 0; d < m.D; d++) {
            mags.push(Math.abs(h[d]));
            if (Math.abs(h[d]) > best) { best = Math.abs(h[d]); bt = t; bd = d; }
          }
        }
        mags.sort((x, y) => x - y);
        const median = mags[Math.floor(mags.length / 2)]; // the upper median of the T·d_model magnitudes
        expect(Math.abs(mv.value[l] - best)).toBeLessThanOrEqual(F32_TOL);
        expect([mv.token[l], mv.dim[l]]).toEqual([bt, bd]);
        expect(Math.abs(mv.ratio[l] - best / median) / (best / median)).toBeLessThanOrEqual(1e-3);
      }
    });

    it('sinks: α_k = mean over queries i ≥ k of A[i,k] for every key k; α_0; sink rate (ε = 0.3)', () => {
      const s = a().sinks;
      const alpha = new Float64Array(m.L * m.H * T);
      for (let l = 0; l < m.L; l++) for (let h = 0; h < m.H; h++) for (let k = 0; k < T; k++) {
        let sum = 0;
        for (let i = k; i < T; i++) sum += m.attn(arrays, p, l, h, i, k);
        alpha[(l * m.H + h) * T + k] = sum / (T - k);
      }
      expect(maxDiff(s.alpha, alpha)).toBeLessThanOrEqual(F32_TOL);
      const alpha0 = Array.from({ length: m.L * m.H }, (_, x) => alpha[x * T]);
      expect(maxDiff(s.alpha0, alpha0)).toBeLessThanOrEqual(F32_TOL);
      for (let l = 0; l < m.L; l++) {
        const heads = alpha0.slice(l * m.H, (l + 1) * m.H);
        for (const x of heads) expect(Math.abs(x - 0.3)).toBeGreaterThan(F32_TOL); // no head sits on the threshold
        expect(s.sinkRate[l]).toBeCloseTo(heads.filter((x) => x > 0.3).length / m.H, 6);
      }
    });

    it(`sink position (most total attention mass Σ_{i≥k} A[i,k]) and ‖v‖ there from the head's KV head h // ${m.H / m.KV} (GQA map)`, () => {
      const s = a().sinks;
      for (let l = 0; l < m.L; l++) for (let h = 0; h < m.H; h++) {
        const mass = Array.from({ length: T }, (_, k) => { let x = 0; for (let i = k; i < T; i++) x += m.attn(arrays, p, l, h, i, k); return x; });
        const pos = mass.indexOf(Math.max(...mass));
        expect(s.sinkPos[l * m.H + h]).toBe(pos);
        const kv = Math.floor(h / (m.H / m.KV));
        const v = m.value(arrays, p, l, pos).subarray(kv * m.dHead, (kv + 1) * m.dHead);
        expect(Math.abs(s.sinkValueNorm[l * m.H + h] - l2(v))).toBeLessThanOrEqual(F32_TOL);
      }
    });
  });

  it('sink divergence of two prompts of equal length: Δα_0 and the Jensen–Shannon divergence (nats) of the per-head α/Σα', async () => {
    // Two reference sequences cut to the same length T (their first T positions, prompt + greedy tokens).
    const [p1, p2] = [m.ref.prompts[0], m.ref.prompts[2]];
    const T = Math.max(p1.n_prompt, p2.n_prompt);
    const texts = [p1, p2].map((p) => e.tokenizer.decode(p.sequence_ids.slice(0, T), { skip_special_tokens: true }));
    const [r1, r2] = await Promise.all(texts.map((prompt) => e.analyse({ prompt, good: { ids: [[3]] }, bad: { ids: [[4]] } })));
    expect(r1.ids).toEqual(p1.sequence_ids.slice(0, T));
    expect(r2.ids).toEqual(p2.sequence_ids.slice(0, T));
    const alphaOf = (p: RealPrompt, l: number, h: number) => {
      const arr = m.arrays(p);
      return Array.from({ length: T }, (_, k) => { let x = 0; for (let i = k; i < T; i++) x += m.attn(arr, p, l, h, i, k); return x / (T - k); });
    };
    const d = sinkDivergence(r1.sinks, r2.sinks, T);
    for (let l = 0; l < m.L; l++) for (let h = 0; h < m.H; h++) {
      const a1 = alphaOf(p1, l, h), a2 = alphaOf(p2, l, h);
      const s1 = a1.reduce((x, y) => x + y), s2 = a2.reduce((x, y) => x + y);
      let js = 0;
      for (let k = 0; k < T; k++) {
        const p = a1[k] / s1, q = a2[k] / s2, mid = (p + q) / 2;
        if (p > 0) js += 0.5 * p * Math.log(p / mid);
        if (q > 0) js += 0.5 * q * Math.log(q / mid);
      }
      expect(Math.abs(d.dAlpha0[l * m.H + h] - (a2[0] - a1[0]))).toBeLessThanOrEqual(F32_TOL);
      expect(Math.abs(d.js[l * m.H + h] - js)).toBeLessThanOrEqual(F32_TOL);
    }
  });
});
