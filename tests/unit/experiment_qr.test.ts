import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import QRCode from 'qrcode';
import { useStore } from '../../app/store';
import { experimentFromHash, experimentHash, qrExperiment, shortestF32, snapshot } from '../../app/lib/experiment_state';

/**
 * The experiment link a poster's QR code carries (app/lib/experiment_state.ts): vector values
 * printed as the shortest decimal of their float32 (exact), and the contrastive texts left out,
 * so the default experiment with a CAA vector and a few interventions fits a QR code.
 */

/** A seeded uniform generator (mulberry32) so the vector is the same on every run. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('shortestF32', () => {
  it('reads back as the same float32 for random, tiny, huge and exact values, in at most 9 significant digits', () => {
    const r = rng(7);
    const xs = [0, -0, 1, -1, 0.1, 1e-45, 3.4028234663852886e38, 1.1754943508222875e-38, ...Array.from({ length: 5000 }, () => (r() - 0.5) * 10 ** Math.floor(r() * 12 - 6))];
    for (const x of xs) {
      const y = shortestF32(x);
      expect(Math.fround(y)).toBe(Math.fround(x));
      expect(String(y).replace(/^-|e.*$|\./g, '').replace(/^0+/, '').length).toBeLessThanOrEqual(9);
    }
    expect(shortestF32(Math.fround(0.1))).toBe(0.1);
  });
});

describe('the QR link of the default experiment', () => {
  const set = JSON.parse(fs.readFileSync('public/steering/happy_sad.json', 'utf8')) as { positive: string[]; negative: string[] };
  const r = rng(1);
  const vector = Float32Array.from({ length: 64 }, () => (r() - 0.5) * 3);
  const entry = { id: 'v1', name: 'CAA happy vs sad (TinyStories)', vector, dModel: 64, hook: 'blocks.3.hook_resid_post', model: 'stories260K', createdAt: '2026-11-30T15:00:00.000Z', provenance: { method: 'caa' as const, position: 'last', positive: set.positive, negative: set.negative } };
  const base = useStore.getState();
  const interventions = [1, 2, 3].map((l, i) => ({ ...base, id: i + 1, enabled: true, hook: `blocks.${l}.hook_resid_post`, type: 'add' as const, dose: 6, rotateBy: 'theta' as const, mode: 'project' as const, vectorId: 'v1', source: '', head: null, positions: 'all' as const, steps: null }));
  const e = snapshot({ ...base, prompt: 'The little girl felt very', vectors: [entry], interventions: interventions.map(({ id, enabled, hook, type, dose, rotateBy, mode, vectorId, source, head, positions, steps }) => ({ id, enabled, hook, type, dose, rotateBy, mode, vectorId, source, head, positions, steps })) }, ['stories260K']);
  const origin = 'https://branchpoint.example.org/app/';

  it('fits a QR code (error correction M) with the vector inside, and reruns the same vector', () => {
    const { hash, missing } = experimentHash(qrExperiment(e));
    expect(missing).toEqual([]);
    expect(() => QRCode.create(origin + hash, { errorCorrectionLevel: 'M' })).not.toThrow();
    const back = experimentFromHash(hash)!;
    expect(Float32Array.from(back.vectors[0].values!)).toEqual(vector);
    expect(back.interventions.map((d) => d.hook)).toEqual(['blocks.1.hook_resid_post', 'blocks.2.hook_resid_post', 'blocks.3.hook_resid_post']);
    expect(back.vectors[0].provenance).toMatchObject({ method: 'caa', positive: [], negative: [] });
  });

  it('is shorter than the copied link, which keeps the contrastive texts', () => {
    const full = experimentHash(e).hash;
    expect(experimentFromHash(full)!.vectors[0].provenance.positive).toEqual(set.positive);
    expect(experimentHash(qrExperiment(e)).hash.length).toBeLessThan(full.length / 1.5);
  });
});
