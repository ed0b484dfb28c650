import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { chooseNextToken, DEVICE_TOP_K_MAX } from '../../workers/engine/model/next_token';
import { seededRandom } from '../../workers/engine/analysis/sampling';

/** Float64 log_softmax of one row (the definition). */
function logSoftmax64(x: Float32Array): Float64Array {
  const m = Math.max(...x);
  const lse = m + Math.log(x.reduce((s, v) => s + Math.exp(v - m), 0));
  return Float64Array.from(x, (v) => v - lse);
}

/**
 * The draw generation has always made: softmax(logp / temperature) over the top-k (most likely first,
 * ties to the lower id; all tokens in id order when topK = 0), inverse CDF with one uniform.
 */
function drawReference(lp: Float64Array, temperature: number, topK: number, u01: number): number {
  let idx = Array.from(lp.keys());
  if (topK > 0) idx = idx.sort((a, b) => lp[b] - lp[a] || a - b).slice(0, topK);
  const m = Math.max(...idx.map((i) => lp[i]));
  const w = idx.map((i) => Math.exp((lp[i] - m) / temperature));
  let u = u01 * w.reduce((s, x) => s + x, 0);
  for (let j = 0; j < idx.length; j++) { u -= w[j]; if (u <= 0) return idx[j]; }
  return idx[idx.length - 1];
}

describe('next token chosen on the device', () => {
  const V = 1000;
  const rnd = seededRandom(7);
  const b = new CpuBackend();
  const good = [3, 10], bad = [999];

  it('greedy picks the first maximum, with its log-prob and the futures\' margin', async () => {
    const x = Float32Array.from({ length: V }, () => rnd() * 8 - 4);
    x[500] = x[20] = 9; // a tie: the lower id wins
    const t = b.upload(x, [1, V]);
    const r = await chooseNextToken(b, t, { temperature: 0, topK: 0, rand: rnd, good, bad });
    const lp = logSoftmax64(x);
    expect(r.id).toBe(20);
    expect(Math.abs(r.logProb - lp[20])).toBeLessThan(1e-5);
    const lse = (ids: number[]) => Math.log(ids.reduce((s, i) => s + Math.exp(lp[i]), 0));
    expect(Math.abs(r.margin - (lse(good) - lse(bad)))).toBeLessThan(1e-5);
  });

  it.each([[0.7, 5], [1.3, 40], [1, DEVICE_TOP_K_MAX + 1], [0.9, 0]])('temperature %f, top-k %i draws the token the definition draws, for 50 seeds', async (temperature, topK) => {
    const x = Float32Array.from({ length: V }, () => rnd() * 6 - 3);
    const t = b.upload(x, [1, V]);
    const lp = logSoftmax64(x);
    for (let seed = 0; seed < 50; seed++) {
      const u = seededRandom(seed)();
      const r = await chooseNextToken(b, t, { temperature, topK, rand: seededRandom(seed), good, bad });
      expect(r.id).toBe(drawReference(lp, temperature, topK, u));
      expect(Math.abs(r.logProb - lp[r.id])).toBeLessThan(1e-5);
    }
  });

  it('frees its log-softmax and gathered columns on every path (greedy, top-k on the device, the whole row); the logits stay', async () => {
    const x = Float32Array.from({ length: V }, () => rnd() * 6 - 3);
    const t = b.upload(x, [1, V]);
    const live = b.liveTensors();
    for (const [temperature, topK] of [[0, 0], [0.8, 5], [0.8, 0], [0.8, DEVICE_TOP_K_MAX + 1]]) {
      await chooseNextToken(b, t, { temperature, topK, rand: seededRandom(1), good, bad });
      expect(b.liveTensors()).toBe(live);
    }
    b.release(t);
  });

  it('top-k 1 with a temperature, and a top-k of the whole vocabulary, draw as the definition does', async () => {
    const x = Float32Array.from({ length: V }, () => rnd() * 6 - 3);
    const t = b.upload(x, [1, V]);
    const lp = logSoftmax64(x);
    for (const [temperature, topK] of [[0.7, 1], [0.7, V], [0.7, DEVICE_TOP_K_MAX]]) {
      for (let seed = 0; seed < 10; seed++) {
        const r = await chooseNextToken(b, t, { temperature, topK, rand: seededRandom(seed), good, bad });
        // a top-k of the whole vocabulary is every token, walked in id order as with top-k 0
        expect(r.id).toBe(drawReference(lp, temperature, topK >= V ? 0 : topK, seededRandom(seed)()));
        expect(Math.abs(r.logProb - lp[r.id])).toBeLessThan(1e-5);
      }
    }
    b.release(t);
  });

  it('temperature 0 is greedy whatever the top-k; a top-k equal to a small vocabulary walks every token in id order', async () => {
    const x = Float32Array.from({ length: V }, () => rnd() * 8 - 4);
    x[77] = 10;
    const t = b.upload(x, [1, V]);
    expect((await chooseNextToken(b, t, { temperature: 0, topK: 5, rand: seededRandom(2), good, bad })).id).toBe(77);
    b.release(t);
    const small = Float32Array.from({ length: 50 }, () => rnd() * 4 - 2);
    const s = b.upload(small, [1, 50]);
    const lp = logSoftmax64(small);
    for (let seed = 0; seed < 20; seed++) {
      const r = await chooseNextToken(b, s, { temperature: 1, topK: 50, rand: seededRandom(seed), good: [1], bad: [2] });
      expect(r.id).toBe(drawReference(lp, 1, 0, seededRandom(seed)()));
    }
    b.release(s);
  });
});
