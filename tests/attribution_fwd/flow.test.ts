import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { flowAttribution } from '../../workers/engine/studies/flow';
import { sharedPath } from '../shared';

/**
 * The flow attribution (studies/flow.ts) against the same definition computed the other way round,
 * written here with no code shared with the engine (weights and captures read through Engine.run
 * only): the residual of every position is carried FORWARD as a sum over source tokens,
 * C^l[i][j] [d_model], with attention patterns and ln1's σ frozen at the run (the value path:
 * A[h,i,j']·W_O^h W_V^h ln1(C[j'][j]); ln1's mean subtracted; constants carried apart), each MLP
 * output added to its own position's source; the attribution of token j is the frozen final norm
 * readout g·C^L[t][j]. The study computes it top-down (directions), so agreement is a real check.
 */
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); }, 120_000);
afterAll(() => e.dispose());

async function independentFlow(ids: number[], good: number, bad: number): Promise<{ attr: number[]; constant: number }> {
  const s = e.spec, b = e.backend, W = e.model.weights, L = s.nLayers, H = s.nHeads, Hkv = s.nKvHeads, dh = s.dHead, D = s.dModel, T = ids.length;
  const hooks: string[] = ['hook_embed'];
  for (let l = 0; l < L; l++) hooks.push(`blocks.${l}.hook_resid_pre`, `blocks.${l}.attn.hook_pattern`, `blocks.${l}.hook_mlp_out`);
  const { captured } = await e.run(ids, { capture: hooks });
  // C[i][j]: source j's part of position i's residual; K[i]: the constant part
  let C: Float64Array[][] = Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) => (i === j ? Float64Array.from(captured.get('hook_embed')!.subarray(i * D, (i + 1) * D)) : new Float64Array(D))));
  let K: Float64Array[] = Array.from({ length: T }, () => new Float64Array(D));
  for (let l = 0; l < L; l++) {
    const bw = W.blocks[l];
    const w1 = await b.read(bw.ln1.w), wv = await b.read(bw.v.w), wo = await b.read(bw.o.w);
    const x = captured.get(`blocks.${l}.hook_resid_pre`)!, A = captured.get(`blocks.${l}.attn.hook_pattern`)!, mlp = captured.get(`blocks.${l}.hook_mlp_out`)!;
    const sigma = Array.from({ length: T }, (_, j) => { let ss = 0; for (let c = 0; c < D; c++) ss += x[j * D + c] ** 2; return Math.sqrt(ss / D + s.normEps); });
    // value of head h at j' for an input vector u: W_V^h (u ⊙ w1 / σ_j')   (RMSNorm, no biases in this model)
    const headOut = (u: Float64Array, jp: number, h: number): Float64Array => {
      const n = Array.from(u, (val, c) => (val * (w1[c] + s.normOffset)) / sigma[jp]);
      const kv = Math.floor(h / (H / Hkv));
      const vh = new Float64Array(dh);
      for (let k = 0; k < dh; k++) for (let c = 0; c < D; c++) vh[k] += wv[(kv * dh + k) * D + c] * n[c];
      const o = new Float64Array(D);
      for (let c = 0; c < D; c++) for (let k = 0; k < dh; k++) o[c] += wo[c * H * dh + h * dh + k] * vh[k];
      return o;
    };
    const C2 = C.map((row) => row.map((v) => Float64Array.from(v)));
    const K2 = K.map((v) => Float64Array.from(v));
    for (let i = 0; i < T; i++) {
      for (let h = 0; h < H; h++) {
        for (let jp = 0; jp <= i; jp++) {
          const a = A[(h * T + i) * T + jp];
          if (a === 0) continue;
          for (let j = 0; j <= jp; j++) { const o = headOut(C[jp][j], jp, h); for (let c = 0; c < D; c++) C2[i][j][c] += a * o[c]; }
          const o = headOut(K[jp], jp, h);
          for (let c = 0; c < D; c++) K2[i][c] += a * o[c];
        }
      }
      for (let c = 0; c < D; c++) C2[i][i][c] += mlp[i * D + c];
    }
    C = C2; K = K2;
  }
  // the frozen final norm readout at t = T−1, σ from the rebuilt residual
  const t = T - 1;
  const xt = new Float64Array(D);
  for (let j = 0; j < T; j++) for (let c = 0; c < D; c++) xt[c] += C[t][j][c];
  for (let c = 0; c < D; c++) xt[c] += K[t][c];
  const nf = await b.read(W.lnFinal.w), wu = await b.read(W.unembed);
  let ss = 0; for (let c = 0; c < D; c++) ss += xt[c] ** 2;
  const sig = Math.sqrt(ss / D + s.normEps);
  const g = Array.from({ length: D }, (_, c) => ((wu[good * D + c] - wu[bad * D + c]) * (nf[c] + s.normOffset)) / sig);
  const dotg = (v: Float64Array) => v.reduce((acc, val, c) => acc + val * g[c], 0);
  return { attr: C[t].map(dotg), constant: dotg(K[t]) };
}

describe('flow attribution (value-weighted, margin-projected)', () => {
  it('equals an independent forward computation of the same definition on stories260K within 1e-5', async () => {
    const r = await flowAttribution(e, { prompt: PROMPT, good: { text: ' Tom' }, bad: { text: ' Lily' }, faithfulness: false });
    const own = await independentFlow(r.ids, r.good.firstIds[0], r.bad.firstIds[0]);
    let maxErr = 0, maxAbs = 0;
    for (let j = 0; j < r.ids.length; j++) { maxErr = Math.max(maxErr, Math.abs(r.attribution[j] - own.attr[j])); maxAbs = Math.max(maxAbs, Math.abs(own.attr[j])); }
    console.log(`flow vs independent: max |Δ| ${maxErr.toExponential(2)} (max |attr| ${maxAbs.toFixed(4)}), bias ${r.bias.toExponential(2)} vs ${own.constant.toExponential(2)}, sumError ${r.sumError.toExponential(2)}, frozen ${r.frozenMargin.toFixed(6)} engine ${r.margin.toFixed(6)}`);
    console.log(r.tokens.map((tk, j) => `${JSON.stringify(tk)}:${r.attribution[j].toFixed(3)}`).join(' '));
    expect(maxErr).toBeLessThan(1e-5);
    expect(Math.abs(r.bias - own.constant)).toBeLessThan(1e-5);
    expect(Math.abs(r.sumError)).toBeLessThan(1e-4);
    expect(Math.abs(r.frozenMargin - r.margin)).toBeLessThan(1e-4);
    // heads and sources: per layer, the head masses are their sources' sums
    for (let l = 0; l < r.nLayers; l++) for (let h = 0; h < r.nHeads; h++) {
      let s = 0; for (let j = 0; j < r.ids.length; j++) s += r.headSource[(l * r.nHeads + h) * r.ids.length + j];
      expect(Math.abs(s - r.heads[l * r.nHeads + h])).toBeLessThan(1e-9);
    }
  }, 60_000);

  it('planted copy: " Tom" can only be copied from the one span that holds it, and the flow finds that span', async () => {
    for (const bad of [' Sue', ' Ben', ' Lily']) {
      const spans = [{ label: 'Lily (1st)', start: 1, end: 2 }, { label: 'and', start: 2, end: 3 }, { label: 'Tom', start: 3, end: 5 }, { label: 'went to the park.', start: 5, end: 13 }, { label: 'Lily (2nd)', start: 13, end: 14 }, { label: 'gave the ball to', start: 14, end: 21 }];
      const r = await flowAttribution(e, { prompt: PROMPT, good: { text: ' Tom' }, bad: { text: bad }, spans });
      const top = [...r.spans].sort((a, b) => b.value - a.value)[0];
      // the top token is in the evidence span too
      let best = 0; for (let j = 1; j < r.nPrompt; j++) if (r.attribution[j] > r.attribution[best]) best = j;
      const f = r.faithfulness!;
      console.log(`bad ${JSON.stringify(bad)}: Δ ${r.margin.toFixed(3)}; spans ${r.spans.map((sp) => `${sp.label} ${sp.value.toFixed(3)}`).join(', ')}; top token ${best} ${JSON.stringify(r.tokens[best])}; deletion ${f.deletion.map((d) => d.toFixed(2)).join(' ')}; insertion ${f.insertion.map((d) => d.toFixed(2)).join(' ')}`);
      expect(top.label).toBe('Tom');
      expect(best).toBeGreaterThanOrEqual(3);
      expect(best).toBeLessThan(5);
      // deleting the top tokens first takes Δ down; k = 0 is the unedited run
      expect(Math.abs(f.deletion[0] - r.margin)).toBeLessThan(1e-5);
      expect(f.deletion[1]).toBeLessThan(f.deletion[0]);
      expect(f.deletionArea).toBeLessThan(f.insertionArea);
    }
  }, 120_000);

  it('recursive through generated tokens: the credit of generated tokens is handed back to the prompt, total kept', async () => {
    const r = await flowAttribution(e, { prompt: 'Lily and Tom went to the park. Lily gave the ball', good: { text: ' Tom' }, bad: { text: ' Sue' }, generated: 3, faithfulness: false, spans: [{ label: 'Tom', start: 3, end: 5 }] });
    expect(r.ids.length).toBe(r.nPrompt + 3);
    expect(r.hops.map((h) => h.position)).toEqual([r.nPrompt + 2, r.nPrompt + 1, r.nPrompt]);
    const total = r.attribution.reduce((a, b) => a + b, 0) + r.bias;
    console.log(`generated ${JSON.stringify(r.tokens.slice(r.nPrompt))}: Δ ${r.margin.toFixed(3)}, Σ attribution + bias ${total.toFixed(6)} vs frozen ${r.frozenMargin.toFixed(6)}; hops ${r.hops.map((h) => `${h.position}${JSON.stringify(h.token)} mass ${h.mass.toFixed(3)} Δp ${h.margin.toFixed(2)}`).join('; ')}; Tom span ${r.spans[0].value.toFixed(3)}`);
    expect(Math.abs(total - r.frozenMargin)).toBeLessThan(1e-4);
    expect(Math.abs(r.frozenMargin - r.margin)).toBeLessThan(1e-4);
    // the generated tokens held credit before the hand-back
    expect(r.hops.some((h) => Math.abs(h.mass) > 1e-3)).toBe(true);
    expect(Array.from(r.direct.slice(r.nPrompt)).some((c) => c !== 0)).toBe(true);
  }, 120_000);

  it('a decision after one generated token: the same sequence as the prompt run, its credit handed back, the evidence span still found', async () => {
    const plain = await flowAttribution(e, { prompt: PROMPT, good: { text: ' Tom' }, bad: { text: ' Sue' }, faithfulness: false });
    const r = await flowAttribution(e, { prompt: 'Lily and Tom went to the park. Lily gave the ball', good: { text: ' Tom' }, bad: { text: ' Sue' }, generated: 1, faithfulness: false, spans: [{ label: 'Tom', start: 3, end: 5 }, { label: 'Lily', start: 1, end: 2 }] });
    expect(r.ids).toEqual(plain.ids); // greedy " to": the same 21 tokens
    for (let j = 0; j < r.ids.length; j++) expect(Math.abs(r.direct[j] - plain.attribution[j])).toBeLessThan(1e-9);
    const moved = r.direct[r.nPrompt];
    expect(r.hops[0].mass).toBe(moved);
    let diff = 0; for (let j = 0; j < r.nPrompt; j++) diff += r.attribution[j] - plain.attribution[j];
    expect(Math.abs(diff + (r.bias - plain.bias) - moved)).toBeLessThan(1e-6); // the hop's own float32 sum error, scaled by mass / Δ_p
    expect(r.spans[0].value).toBeGreaterThan(r.spans[1].value);
  }, 120_000);
});

describe('flow attribution on fixture architectures: Σ attribution + bias = the frozen margin', () => {
  for (const name of ['gpt2-tiny', 'qwen2-tiny']) {
    it(`${name} (biases: LayerNorm / b_O / b_V / qkv bias as constants; GQA)`, async () => {
      const f = await Engine.load(new NodeFiles(sharedPath('fixtures', name)), new CpuBackend());
      try {
        const r = await flowAttribution(f, { prompt: 'hello world, this is a test of', good: { ids: [[7]] }, bad: { ids: [[12]] }, generated: 2, faithfulness: false });
        const total = r.attribution.reduce((a, b) => a + b, 0) + r.bias;
        console.log(`${name}: frozen ${r.frozenMargin.toFixed(6)} margin ${r.margin.toFixed(6)} sumError ${r.sumError.toExponential(2)} after hand-back ${(total - r.frozenMargin).toExponential(2)} bias ${r.bias.toFixed(4)}`);
        expect(Math.abs(r.sumError)).toBeLessThan(1e-4);
        expect(Math.abs(total - r.frozenMargin)).toBeLessThan(1e-4);
        expect(Math.abs(r.frozenMargin - r.margin)).toBeLessThan(1e-4);
      } finally { f.dispose(); }
    }, 60_000);
  }
});
