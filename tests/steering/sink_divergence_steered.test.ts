import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { toIntervention } from '../../workers/engine/steering/spec';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import type { Intervention } from '../../workers/engine/model/intervention';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

/**
 * Sink divergence of one model, steered vs unsteered (`branchpoint sinks --divergence true`,
 * DESIGN.md §3: per head the change in α_0 and the Jensen–Shannon divergence of the key
 * distributions α/Σα): against the test's own float64 computation from the attention patterns of
 * the two runs through the single-run API (Engine.run capturing every blocks.l.attn.hook_pattern,
 * with and without the intervention), and exactly 0 where the steering cannot reach.
 */
const MODEL = sharedPath('models', 'stories260K');
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
const L = 5, H = 8, LAYER = 2; // steering at blocks.2.hook_resid_post: blocks 0–2 attend as before
const rand = seededRandom(11);
const VECTOR = Array.from({ length: 64 }, () => rand() * 2 - 1);
const SPEC = { hook: `blocks.${LAYER}.hook_resid_post`, type: 'add' as const, vector: VECTOR, alpha: 6 };
let e: Engine;

/** Per (layer, head) in float64: α_k = mean over queries i ≥ k of A[i, k], for k = 0 … T−1. */
async function alphas(interventions: Intervention[]): Promise<number[][][]> {
  const ids = e.encodePrompt({ prompt: PROMPT });
  const T = ids.length;
  const names = Array.from({ length: L }, (_, l) => `blocks.${l}.attn.hook_pattern`);
  const { captured } = await e.run(ids, { capture: names, logits: 'last', interventions });
  return names.map((n) => {
    const p = captured.get(n)!;
    return Array.from({ length: H }, (_, h) => Array.from({ length: T }, (_, k) => {
      let s = 0;
      for (let i = k; i < T; i++) s += p[(h * T + i) * T + k];
      return s / (T - k);
    }));
  });
}

/** Jensen–Shannon divergence (nats) of two non-negative vectors, each normalised to sum 1. */
function js(a: number[], b: number[]): number {
  const sa = a.reduce((s, x) => s + x, 0), sb = b.reduce((s, x) => s + x, 0);
  let d = 0;
  for (let k = 0; k < a.length; k++) {
    const p = a[k] / sa, q = b[k] / sb, m = (p + q) / 2;
    if (p > 0) d += 0.5 * p * Math.log(p / m);
    if (q > 0) d += 0.5 * q * Math.log(q / m);
  }
  return d;
}

beforeAll(async () => {
  e = await Engine.load(new NodeFiles(MODEL), new CpuBackend());
}, 60_000);
afterAll(() => e.dispose());

describe('sinks --divergence: steered vs unsteered', () => {
  it('Δα_0 and JS per head equal the float64 computation from the two runs\' patterns; exactly 0 in blocks 0–2, upstream of the steering; sink rates of each run', async () => {
    const r = await runCli(['sinks', '--model', MODEL, '--prompt', PROMPT, '--intervention', JSON.stringify(SPEC), '--divergence', 'true', '--threads', '1']);
    expect(r.code, r.err).toBe(0);
    const o = JSON.parse(r.out) as Record<string, number[][]> & { sink_rate: number[]; sink_rate_unsteered: number[]; eps: number };
    const T = o.ids.length as unknown as number;
    const iv = toIntervention({ ...SPEC, vector: Float32Array.from(VECTOR) }, e.spec, { nPrompt: T });
    const [u, s] = [await alphas([]), await alphas([iv])];
    let moved = 0;
    for (let l = 0; l < L; l++) {
      for (let h = 0; h < H; h++) {
        const dA = s[l][h][0] - u[l][h][0], d = js(u[l][h], s[l][h]);
        expect(o.sink_dalpha0[l][h]).toBeCloseTo(dA, 6);
        expect(o.sink_js[l][h]).toBeCloseTo(d, 6);
        expect(o.alpha0_unsteered[l][h]).toBeCloseTo(u[l][h][0], 6);
        expect(o.alpha0[l][h]).toBeCloseTo(s[l][h][0], 6);
        if (l <= LAYER) {
          expect(o.sink_dalpha0[l][h], `L${l}H${h}`).toBe(0);
          expect(o.sink_js[l][h], `L${l}H${h}`).toBe(0);
        } else if (d > 1e-4) moved++;
      }
    }
    expect(moved).toBeGreaterThan(0); // the steering does move some heads downstream
    for (const [rate, al] of [[o.sink_rate, s], [o.sink_rate_unsteered, u]] as const) {
      rate.forEach((x, l) => expect(x).toBeCloseTo(al[l].filter((h) => h[0] > o.eps).length / H, 6));
    }
  }, 60_000);

  it('without interventions the divergence is exactly 0 everywhere', async () => {
    const r = await runCli(['sinks', '--model', MODEL, '--prompt', PROMPT, '--divergence', 'true', '--threads', '1']);
    expect(r.code, r.err).toBe(0);
    const o = JSON.parse(r.out) as { sink_dalpha0: number[][]; sink_js: number[][]; alpha0: number[][]; alpha0_unsteered: number[][] };
    expect(o.sink_dalpha0.flat().every((x) => x === 0)).toBe(true);
    expect(o.sink_js.flat().every((x) => x === 0)).toBe(true);
    expect(o.alpha0_unsteered).toEqual(o.alpha0);
  }, 60_000);
});
