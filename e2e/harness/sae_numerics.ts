/**
 * SAEs on WebGPU against their golden references (../shared/saes/README.md): both SAEs attached at
 * blocks.2.hook_resid_post of stories260K (served under /saes/ and /models/), their
 * hook_sae_acts_post and hook_sae_recons on the reference prompts, the encode of the reference
 * sae_in alone, and the feature clamp against the hand formula x + (c − f_f(x))·W_dec[f] evaluated
 * in float64 on the captured activation. Exposes `window.runSaeNumerics(tuning)` for sae_numerics.spec.ts.
 */
import { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import type { KernelTuning } from '../../workers/engine/backend/webgpu_host';
import { Engine } from '../../workers/engine/engine';
import { HttpFiles } from '../../workers/engine/io/model_files';
import { decodeTensor, parseSafetensors } from '../../workers/engine/io/safetensors';
import { readSae } from '../../workers/engine/sae/files';
import { Sae } from '../../workers/engine/sae/sae';
import { diff } from './compare';
import type { NumericsRow } from './numerics';

declare global {
  interface Window { runSaeNumerics: (tuning?: KernelTuning) => Promise<{ adapter: string; tuning: KernelTuning; rows: NumericsRow[]; l0: { what: string; want: number[]; got: number[] }[] }> }
}

const HOOK = 'blocks.2.hook_resid_post';
const TOL = 1e-4;

async function reference(url: string): Promise<Map<string, Float32Array>> {
  const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
  const h = parseSafetensors(bytes, url);
  return new Map([...h.tensors].map(([n, e]) => [n, decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype)]));
}

window.runSaeNumerics = async (tuning?: KernelTuning) => {
  const b = await WebGpuBackend.create({ tuning });
  const rows: NumericsRow[] = [];
  const l0: { what: string; want: number[]; got: number[] }[] = [];
  const e = await Engine.load(new HttpFiles('stories260K', '/models/stories260K/'), b);
  try {
    for (const kind of ['relu', 'jumprelu']) {
      const dir = `/saes/stories260K-${HOOK}-${kind}/`;
      const w = await readSae(new HttpFiles(`${kind} SAE`, dir));
      const sae = new Sae(b, w, e.spec);
      const ref = await reference(`${dir}reference.safetensors`);
      const json = (await (await fetch(`${dir}reference.json`)).json()) as { prompts: { key: string; input_ids: number[]; positions: { l0: number }[] }[] };
      for (const p of json.prompts) {
        const T = p.input_ids.length;
        const { captured } = await e.run(p.input_ids, { capture: [HOOK, `${HOOK}.hook_sae_acts_post`, `${HOOK}.hook_sae_recons`], saes: [{ sae }] });
        const acts = captured.get(`${HOOK}.hook_sae_acts_post`)!;
        rows.push({ model: kind, what: `${p.key}: hook_sae_acts_post vs feature_acts`, maxAbs: diff(acts, ref.get(`${p.key}.feature_acts`)!).maxAbs, tol: TOL });
        rows.push({ model: kind, what: `${p.key}: hook_sae_recons vs sae_out`, maxAbs: diff(captured.get(`${HOOK}.hook_sae_recons`)!, ref.get(`${p.key}.sae_out`)!).maxAbs, tol: TOL });
        l0.push({ what: `${kind} ${p.key}`, want: p.positions.map((q) => q.l0), got: Array.from({ length: T }, (_, t) => acts.subarray(t * 256, (t + 1) * 256).filter((v) => v > 0).length) });
        // the encoder alone, from the reference sae_in
        const x = b.upload(ref.get(`${p.key}.sae_in`)!, [T, 64]);
        const { pre, acts: a2 } = sae.encode(x);
        const rec = sae.decode(a2);
        rows.push({ model: kind, what: `${p.key}: encode(sae_in) vs feature_acts`, maxAbs: diff(await b.read(a2), ref.get(`${p.key}.feature_acts`)!).maxAbs, tol: TOL });
        rows.push({ model: kind, what: `${p.key}: decode(encode(sae_in)) vs sae_out`, maxAbs: diff(await b.read(rec), ref.get(`${p.key}.sae_out`)!).maxAbs, tol: TOL });
        for (const t of [x, pre, a2, rec]) b.release(t);
      }
      // clamp feature 54 to c = 2.5 at positions 1 and 3: the hand formula on the captured activation
      const ids = json.prompts[0].input_ids;
      const x = (await e.run(ids, { capture: [HOOK] })).captured.get(HOOK)!;
      const y = (await e.run(ids, { capture: [HOOK], interventions: [{ hook: HOOK, op: { kind: 'sae_clamp', sae, feature: 54, value: 2.5 }, positions: [1, 3] }] })).captured.get(HOOK)!;
      const want = Float32Array.from(x);
      for (const t of [1, 3]) {
        let pre = w.b_enc[54];
        for (let d = 0; d < 64; d++) pre += (x[t * 64 + d] - (w.cfg.applyBDecToInput ? w.b_dec[d] : 0)) * w.W_enc[d * 256 + 54];
        const f = w.threshold ? (pre > w.threshold[54] ? pre : 0) : Math.max(0, pre);
        for (let d = 0; d < 64; d++) want[t * 64 + d] = x[t * 64 + d] + (2.5 - f) * w.W_dec[54 * 64 + d];
      }
      rows.push({ model: kind, what: 'sae_clamp feature 54 → 2.5 at positions 1, 3 vs x + (c − f(x))·W_dec[f]', maxAbs: diff(y, want).maxAbs, tol: TOL });
      sae.release();
    }
  } finally {
    e.dispose();
  }
  return { adapter: b.description, tuning: b.tuning, rows, l0 };
};
