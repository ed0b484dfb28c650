import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { Engine } from '../../workers/engine/engine';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { readReference, sharedPath } from '../shared';

/**
 * The full logit lens in float64, written out here from its definition (nostalgebraist 2020):
 * log_softmax(cap·tanh(W_U · LN_f(h) / cap)) over the whole vocabulary, LN_f recomputed on h.
 */
function fullLens(h: Float32Array, f: { wu: Float32Array; normW: Float32Array; normB?: Float32Array; layer: boolean; eps: number; offset: number; cap: number; V: number }): Float64Array {
  const D = h.length;
  let mean = 0;
  if (f.layer) { for (const x of h) mean += x; mean /= D; }
  let ss = 0;
  for (const x of h) ss += (x - mean) ** 2;
  const inv = 1 / Math.sqrt(ss / D + f.eps);
  const n = Array.from(h, (x, i) => (x - mean) * inv * (f.normW[i] + f.offset) + (f.normB?.[i] ?? 0));
  const z = new Float64Array(f.V);
  for (let v = 0; v < f.V; v++) {
    let acc = 0;
    for (let i = 0; i < D; i++) acc += f.wu[v * D + i] * n[i];
    z[v] = f.cap > 0 ? f.cap * Math.tanh(acc / f.cap) : acc;
  }
  const m = Math.max(...z);
  let s = 0;
  for (const x of z) s += Math.exp(x - m);
  const lse = m + Math.log(s);
  return z.map((x) => x - lse);
}

const lse = (xs: number[]) => { const m = Math.max(...xs); return m + Math.log(xs.reduce((s, x) => s + Math.exp(x - m), 0)); };

const cases = [
  // stories260K: RMSNorm, tied W_U
  { dir: sharedPath('models', 'stories260K'), prompt: 'Lily and Tom went to the park. Lily gave the ball to', normW: 'model.norm.weight', wu: 'lm_head.weight', layer: false, eps: 1e-5, offset: 0, cap: 0 },
  // gemma2-tiny: (1 + w) RMSNorm and final_logit_softcapping = 3
  { dir: sharedPath('fixtures', 'gemma2-tiny'), prompt: 'The cat sat on the mat and', normW: 'model.norm.weight', wu: 'model.embed_tokens.weight', layer: false, eps: 1e-6, offset: 1, cap: 3 },
  // gpt2-tiny: LayerNorm with bias
  { dir: sharedPath('fixtures', 'gpt2-tiny'), prompt: 'The cat sat on the mat and', normW: 'transformer.ln_f.weight', normB: 'transformer.ln_f.bias', wu: 'transformer.wte.weight', layer: true, eps: 1e-5, offset: 0, cap: 0 },
  // mixtral-tiny: a mixture of experts in every block, untied W_U
  { dir: sharedPath('fixtures-moe', 'mixtral-tiny'), prompt: 'The cat sat on the mat and', normW: 'model.norm.weight', wu: 'lm_head.weight', layer: false, eps: 1e-5, offset: 0, cap: 0 },
];

describe.each(cases)('logit lens on $dir', async (c) => {
  const engine = await Engine.load(new NodeFiles(c.dir), new CpuBackend());
  const w = readReference(`${c.dir}/model.safetensors`);
  const cfg = JSON.parse(fs.readFileSync(`${c.dir}/config.json`, 'utf8'));
  const V: number = cfg.vocab_size;
  const lensDef = { wu: w.get(c.wu)!.data, normW: w.get(c.normW)!.data, normB: c.normB ? w.get(c.normB)!.data : undefined, layer: c.layer, eps: c.eps, offset: c.offset, cap: c.cap, V };
  // token sets of several members, first tokens only (the lens grid's futures)
  const good = [[17], [200], [5]], bad = [[42], [301]];
  const a = await engine.analyse({ prompt: c.prompt, good: { ids: good }, bad: { ids: bad } });
  const L = a.nLayers, T = a.ids.length;
  const names = ['blocks.0.hook_resid_pre', ...Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_post`)];
  const { captured } = await engine.run(a.ids, { capture: names });
  const D: number = cfg.hidden_size ?? cfg.n_embd;
  const hv = (l: number, t: number) => captured.get(names[l])!.slice(t * D, (t + 1) * D);

  it('lens margin from the futures\' unembedding columns equals the full log_softmax margin (token sets, every cell) within 1e-5', () => {
    let worst = 0;
    for (let l = 0; l <= L; l++) {
      for (let t = 0; t < T; t++) {
        const lp = fullLens(hv(l, t), lensDef);
        const want = lse(good.map(([id]) => lp[id])) - lse(bad.map(([id]) => lp[id]));
        worst = Math.max(worst, Math.abs(want - a.lensMargin[l * T + t]));
      }
    }
    expect(worst).toBeLessThanOrEqual(1e-5);
    expect(Array.from(a.finalMargin)).toEqual(Array.from(a.lensMargin.subarray(L * T)));
  });

  it('lens top tokens on demand are the full lens\'s top-k (ids and log-probs) at any cell', async () => {
    for (const [l, t] of [[0, 0], [1, T - 1], [L, T - 1], [L, 2]]) {
      const top = await engine.lensTop(a.lensHandle, l, t, 5);
      const lp = fullLens(hv(l, t), lensDef);
      const order = Array.from(lp.keys()).sort((x, y) => lp[y] - lp[x] || x - y).slice(0, 5);
      expect(Array.from(top.ids)).toEqual(order);
      for (let i = 0; i < 5; i++) expect(Math.abs(top.logProbs[i] - lp[order[i]])).toBeLessThanOrEqual(1e-5);
    }
  });

  it('a cell outside the grid, or an analysis no longer held, is refused with a message', async () => {
    await expect(engine.lensTop(a.lensHandle, L + 1, 0)).rejects.toThrow(/outside the grid/);
    await engine.analyse({ prompt: c.prompt, good: { ids: good }, bad: { ids: bad } });
    await engine.analyse({ prompt: c.prompt, good: { ids: good }, bad: { ids: bad } });
    await expect(engine.lensTop(a.lensHandle, 0, 0)).rejects.toThrow(/no longer held/);
  });
});
