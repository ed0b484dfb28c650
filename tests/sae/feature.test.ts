import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { readSae } from '../../workers/engine/sae/files';
import { Sae } from '../../workers/engine/sae/sae';
import { analyseSae, featureInfo, maxActivating } from '../../workers/engine/studies/sae_features';
import { readReference, sharedPath } from '../shared';
import { SAE_DIRS } from './sae_files';

/**
 * What the SAE view says about one feature, against golden data and closed forms:
 * - its max-activating tokens in the prompt against the reference feature_acts of ../shared/saes;
 * - its decoder direction's lens, top-k of log_softmax(W_U · g ⊙ W_dec[f] / rms(W_dec[f])), computed
 *   here in float64 from stories260K's model.safetensors (tied embeddings: W_U = embed_tokens);
 * - its cosine with a library vector.
 */
const DIR = SAE_DIRS.relu;
const KEY = 'lily_tom_ball';
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
const D = 64, S = 256;

let e: Engine, sae: Sae;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  sae = new Sae(e.backend, await readSae(new NodeFiles(DIR)), e.spec);
});
afterAll(() => { sae.release(); e.dispose(); });

describe('an SAE feature in the view', () => {
  it('max-activating tokens of every feature equal the reference feature_acts ranked per feature (values to 1e-4, positions where the ranks are 1e-3 apart)', async () => {
    const ref = readReference(`${DIR}/reference.safetensors`).get(`${KEY}.feature_acts`)!.data;
    const T = ref.length / S;
    const a = await analyseSae(e, sae, { prompt: PROMPT, maxK: 5 });
    expect(a.maxK).toBe(5);
    let checkedPositions = 0;
    for (let i = 0; i < S; i++) {
      const want = Array.from({ length: T }, (_, t) => [t, ref[t * S + i]] as const).filter(([, v]) => v > 0).sort((x, y) => y[1] - x[1] || x[0] - y[0]).slice(0, 5);
      for (let j = 0; j < 5; j++) {
        const got = [a.maxPositions[i * 5 + j], a.maxValues[i * 5 + j]];
        if (j >= want.length) { expect(got).toEqual([-1, 0]); continue; }
        expect(Math.abs(got[1] - want[j][1])).toBeLessThanOrEqual(1e-4);
        const apart = (j === 0 || want[j - 1][1] - want[j][1] > 1e-3) && (j + 1 >= want.length || want[j][1] - want[j + 1][1] > 1e-3);
        if (apart) { expect(got[0]).toBe(want[j][0]); checkedPositions++; }
      }
    }
    expect(checkedPositions).toBeGreaterThan(100);
  });

  it('maxActivating by hand: descending, ties keep the earlier position, −1 / 0 pad', () => {
    // T = 4 positions, 2 features: feature 0 = [1, 3, 3, 0], feature 1 never fires
    const f = Float32Array.from([1, 0, 3, 0, 3, 0, 0, 0]);
    const r = maxActivating(f, 4, 2, 3);
    expect(Array.from(r.positions)).toEqual([1, 2, 0, -1, -1, -1]);
    expect(Array.from(r.values)).toEqual([3, 3, 1, 0, 0, 0]);
  });

  it('the decoder lens equals top-10 of log_softmax(W_U · g ⊙ W_dec[f] / rms) in float64, and the cosine with a vector is ⟨W_dec[f], v⟩ / ‖·‖‖·‖', async () => {
    const model = readReference(sharedPath('models', 'stories260K', 'model.safetensors'));
    const WU = model.get('model.embed_tokens.weight')!.data, g = model.get('model.norm.weight')!.data;
    const Wdec = readReference(`${DIR}/sae_weights.safetensors`).get('W_dec')!.data;
    const V = WU.length / D;
    for (const feature of [45, 144, 200]) {
      const row = Wdec.subarray(feature * D, (feature + 1) * D);
      const rms = Math.sqrt(row.reduce((s, x) => s + x * x, 0) / D + 1e-5);
      const logits = Array.from({ length: V }, (_, v) => { let s = 0; for (let j = 0; j < D; j++) s += WU[v * D + j] * g[j] * row[j] / rms; return s; });
      const m = Math.max(...logits), lse = m + Math.log(logits.reduce((s, x) => s + Math.exp(x - m), 0));
      const want = logits.map((x, v) => [v, x - lse] as const).sort((x, y) => y[1] - x[1] || x[0] - y[0]).slice(0, 10);
      const other = Array.from(Wdec.subarray(7 * D, 8 * D), (x, j) => x + (j === 0 ? 0.5 : 0));
      const info = await featureInfo(e, sae, feature, [{ name: 'v', vector: other }], 10);
      expect(info.lensIds).toEqual(want.map(([v]) => v));
      info.lensLogProbs.forEach((lp, k) => expect(Math.abs(lp - want[k][1])).toBeLessThanOrEqual(1e-4));
      expect(info.lensTokens).toEqual(info.lensIds.map((id) => e.tokenizer.decode([id], { skip_special_tokens: false })));
      let dot = 0, nr = 0, nv = 0;
      for (let j = 0; j < D; j++) { dot += row[j] * other[j]; nr += row[j] ** 2; nv += other[j] ** 2; }
      expect(info.cosines).toHaveLength(1);
      expect(Math.abs(info.cosines[0].cosine - dot / Math.sqrt(nr * nv))).toBeLessThanOrEqual(1e-6);
      expect(Math.abs(info.decoderNorm - Math.sqrt(nr))).toBeLessThanOrEqual(1e-6);
    }
  });
});
