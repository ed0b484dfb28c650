import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { attributionPatching } from '../../workers/engine/studies/atp';
import { patchingGrid } from '../../workers/engine/studies/patching';
import { spearman } from '../../workers/engine/analysis/rank_correlation';
import { maxAbsDiff, readReference, sharedPath } from '../shared';

/**
 * Attribution patching (studies/atp.ts) against the golden float64 AtP and exact patching grids of
 * the stories260K reference pair (shared/models/stories260K/reference/gradients): AtP × (Δ_clean −
 * Δ_corrupt) equals atp_<hook> within 1e-4 nats; the exact grid patching.ts computes equals exact_<hook>.
 */
const DIR = sharedPath('models', 'stories260K', 'reference', 'gradients');
const ref = readReference(`${DIR}/lily_tom_dad.safetensors`);
const CLEAN = 'Lily and Tom went to the park. Lily gave the ball to';
const CORRUPT = 'Lily and dad went to the park. Lily gave the ball to';
const cases = JSON.parse(fs.readFileSync(`${DIR}/cases.json`, 'utf8')) as { ids: number[]; corrupt_ids: number[] }[];
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); }, 120_000);
afterAll(() => e.dispose());

const req = { clean: CLEAN, corrupt: CORRUPT, good: { text: ' Tom' }, bad: { text: ' Lily' } };

describe('attribution patching against the reference', () => {
  it('tokenizes the pair as the reference did', () => {
    expect(e.encodePrompt({ prompt: CLEAN })).toEqual(cases[0].ids);
    expect(e.encodePrompt({ prompt: CORRUPT })).toEqual(cases[0].corrupt_ids);
  });
  for (const hook of ['resid_pre', 'attn_out', 'mlp_out', 'resid_post'] as const) {
    it(`${hook}: AtP × (Δ_clean − Δ_corrupt) equals atp_${hook} within 1e-4`, async () => {
      const r = await attributionPatching(e, { ...req, hook });
      const denom = r.cleanMargin - r.corruptMargin;
      const un = Float64Array.from(r.atp, (x) => x * denom);
      const d = maxAbsDiff(un, ref.get(`atp_${hook}`)!.data);
      const dn = maxAbsDiff(r.atpNats, ref.get(`atp_${hook}`)!.data);
      console.log(`atp_${hook}: max |Δ| ${d.toExponential(2)} (nats field ${dn.toExponential(2)})`);
      expect(d).toBeLessThan(1e-4);
      expect(r.forwards).toBe(2);
      expect(r.backwards).toBe(1);
    }, 60_000);
  }
  for (const hook of ['resid_pre', 'attn_out', 'mlp_out'] as const) {
    it(`${hook}: the exact grid equals exact_${hook}; compare-exact gives the Spearman correlation and flags cells`, async () => {
      const g = await patchingGrid(e, { ...req, hook });
      const exact = Float64Array.from(g.patchedMargin, (m) => m - g.corruptMargin);
      const d = maxAbsDiff(exact, ref.get(`exact_${hook}`)!.data);
      expect(d).toBeLessThan(1e-4);
      const r = await attributionPatching(e, { ...req, hook, compareExact: true, threshold: 0.1 });
      expect(Array.from(r.recovery!)).toEqual(Array.from(g.recovery));
      expect(r.rankCorrelation).toBeCloseTo(spearman(ref.get(`atp_${hook}`)!.data, ref.get(`exact_${hook}`)!.data), 2);
      for (const c of r.disagreements!) expect(Math.abs(c.atp - c.exact)).toBeGreaterThan(0.1);
      const flagged = new Set(r.disagreements!.map((c) => c.layer * r.nCols + c.col));
      for (let i = 0; i < r.atp.length; i++) if (!flagged.has(i)) expect(Math.abs(r.atp[i] - r.recovery![i])).toBeLessThanOrEqual(0.1);
      console.log(`exact_${hook}: max |Δ| ${d.toExponential(2)}; Spearman ${r.rankCorrelation!.toFixed(3)}; ${r.disagreements!.length} cells flagged`);
    }, 120_000);
  }
  it('hook_z: layer × head cells, the head slice summed over positions', async () => {
    const r = await attributionPatching(e, { ...req, hook: 'z', compareExact: true });
    expect(r.columns).toBe('head');
    expect(r.atp.length).toBe(e.spec.nLayers * e.spec.nHeads);
    expect(Number.isFinite(r.rankCorrelation!)).toBe(true);
    console.log(`z: Spearman ${r.rankCorrelation!.toFixed(3)}`);
  }, 120_000);
  it('noising: (h_corrupt − h_clean)·∂Δ/∂h at the clean run, from the reference tensors; normalised as 1 + AtP/(Δc − Δx)', async () => {
    const r = await attributionPatching(e, { ...req, hook: 'attn_out', direction: 'noise' });
    expect(r.direction).toBe('noise');
    const a = ref.get('act_attn_out')!.data, x = ref.get('corrupt_act_attn_out')!.data, g = ref.get('grad_attn_out')!.data, D = e.spec.dModel;
    const want = Array.from({ length: r.atpNats.length }, (_, c) => { let s = 0; for (let d = 0; d < D; d++) s += (x[c * D + d] - a[c * D + d]) * g[c * D + d]; return s; });
    expect(maxAbsDiff(r.atpNats, want)).toBeLessThan(1e-4);
    const denom = r.cleanMargin - r.corruptMargin;
    for (let i = 0; i < r.atp.length; i++) expect(r.atp[i]).toBeCloseTo(1 + r.atpNats[i] / denom, 5);
  }, 60_000);
});
