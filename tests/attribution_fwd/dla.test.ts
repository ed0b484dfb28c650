import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { directLogitAttribution } from '../../workers/engine/studies/dla';
import { sharedPath } from '../shared';

/**
 * Direct logit attribution against its definition written here (no code shared with the study but
 * weight reads): the final residual rebuilt from the captured parts, the final norm applied with its
 * σ frozen (LayerNorm: mean subtracted), the π-weighted logit difference of the futures' first
 * tokens — Σ parts must equal it within 1e-9 relative; heads + attention bias must equal the layer's
 * attn_out part to float32 rounding; frozen margin + set entropy gap must be the engine's margin.
 */
const MODELS = [
  { name: 'stories260K (llama, RMSNorm)', dir: sharedPath('models', 'stories260K'), prompt: 'Lily and Tom went to the park. Lily gave the ball to', good: { text: ' Tom' }, bad: { text: ' Lily' } },
  { name: 'gpt2-tiny (LayerNorm, learned positions, biases)', dir: sharedPath('fixtures', 'gpt2-tiny'), prompt: 'hello world, this is a test of', good: { ids: [[5]] }, bad: { ids: [[17], [40]] } },
  { name: 'qwen2-tiny (GQA, qkv biases)', dir: sharedPath('fixtures', 'qwen2-tiny'), prompt: 'hello world, this is a test of', good: { ids: [[7]] }, bad: { ids: [[12]] } },
];

/** The test's own frozen-norm readout of x (float64): Σ π_a ℓ_a − Σ π_b ℓ_b and the lse margin. */
async function ownReadout(e: Engine, x: Float64Array, good: number[], bad: number[]): Promise<{ frozen: number; lse: number }> {
  const s = e.spec, D = s.dModel, b = e.backend, w = e.model.weights;
  const nw = await b.read(w.lnFinal.w), nb = w.lnFinal.b ? await b.read(w.lnFinal.b) : null;
  const wu = await b.read(w.unembed), ub = w.unembedBias ? await b.read(w.unembedBias) : null;
  let mean = 0;
  if (s.norm === 'layer') mean = x.reduce((a, v) => a + v, 0) / D;
  let ss = 0;
  for (let c = 0; c < D; c++) ss += (x[c] - mean) ** 2;
  const sigma = Math.sqrt(ss / D + s.normEps);
  const y = Array.from(x, (v, c) => ((v - mean) / sigma) * (nw[c] + s.normOffset) + (nb ? nb[c] : 0));
  const logit = (a: number) => y.reduce((acc, v, c) => acc + v * wu[a * D + c], 0) + (ub ? ub[a] : 0);
  const side = (ids: number[]) => {
    const l = ids.map(logit), m = Math.max(...l), ex = l.map((v) => Math.exp(v - m)), z = ex.reduce((a, v) => a + v, 0);
    return { lin: l.reduce((a, v, k) => a + (ex[k] / z) * v, 0), lse: m + Math.log(z) };
  };
  const g = side(good), bd = side(bad);
  return { frozen: g.lin - bd.lin, lse: g.lse - bd.lse };
}

for (const m of MODELS) {
  describe(`direct logit attribution: ${m.name}`, () => {
    let e: Engine;
    beforeAll(async () => { e = await Engine.load(new NodeFiles(m.dir), new CpuBackend()); }, 120_000);
    afterAll(() => e.dispose());

    for (const position of [undefined, 3]) {
      it(`parts sum to the frozen-norm margin exactly (position ${position ?? 'last'})`, async () => {
        const r = await directLogitAttribution(e, { prompt: m.prompt, good: m.good, bad: m.bad, position });
        const s = e.spec, D = s.dModel, L = s.nLayers, H = s.nHeads, p = r.position;
        const hooks = ['hook_embed', ...(s.positional === 'learned' ? ['hook_pos_embed'] : []), ...Array.from({ length: L }, (_, l) => [`blocks.${l}.hook_attn_out`, `blocks.${l}.hook_mlp_out`]).flat()];
        const run = await e.run(r.ids, { capture: hooks });
        const x = new Float64Array(D);
        for (const h of hooks) { const v = run.captured.get(h)!; for (let c = 0; c < D; c++) x[c] += v[p * D + c]; }
        const own = await ownReadout(e, x, r.good.firstIds, r.bad.firstIds);
        let sum = r.embed + r.posEmbed + r.finalBias;
        for (let l = 0; l < L; l++) sum += r.attn[l] + r.mlp[l];
        const rel = Math.abs(sum - own.frozen) / Math.max(1, Math.abs(own.frozen));
        expect(rel).toBeLessThan(1e-9);
        expect(Math.abs(r.frozenMargin - own.frozen) / Math.max(1, Math.abs(own.frozen))).toBeLessThan(1e-9);
        // the frozen margin's relation to the true one: + the sets' entropy gap, exactly at x̂; the engine's float32 Δ within rounding
        expect(Math.abs(r.frozenMargin + r.entropyGap - own.lse)).toBeLessThan(1e-9 * Math.max(1, Math.abs(own.lse)));
        expect(Math.abs(r.remainder)).toBeLessThan(1e-4);
        // heads + the attention's bias = the layer's attn_out part (float32 rounding of W_O·z)
        let scale = 0;
        for (let l = 0; l < L; l++) scale = Math.max(scale, Math.abs(r.attn[l]));
        for (let l = 0; l < L; l++) {
          let hs = r.attnBias[l];
          for (let h = 0; h < H; h++) hs += r.heads[l * H + h];
          expect(Math.abs(hs - r.attn[l])).toBeLessThan(1e-5 * Math.max(1, scale));
          expect(Math.abs(r.headResidual[l])).toBeLessThan(1e-5 * Math.max(1, scale));
        }
        console.log(`${m.name} p=${p}: frozen ${r.frozenMargin.toFixed(6)} margin ${r.margin.toFixed(6)} entropyGap ${r.entropyGap.toExponential(3)} sum−own ${rel.toExponential(2)} remainder ${r.remainder.toExponential(2)} max|headResidual| ${Math.max(...Array.from(r.headResidual, Math.abs)).toExponential(2)}`);
      });
    }
  });
}
