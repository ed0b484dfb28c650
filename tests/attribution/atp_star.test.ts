import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { attributionPatching } from '../../workers/engine/studies/atp';
import { readReference, sharedPath } from '../shared';

/**
 * AtP*'s attention-saturation correction (studies/atp_qk_fix.ts) on the stories260K reference pair
 * (shared/models/stories260K/reference/gradients): the corrected resid_pre grid is closer to the golden
 * exact patching effects exact_resid_pre than plain AtP (atp_resid_pre) is, and in the last block — where
 * only the last position's MLP and the final norm follow the recomputed attention — it nearly equals
 * them where plain AtP misses by more than a nat.
 */
const DIR = sharedPath('models', 'stories260K', 'reference', 'gradients');
const ref = readReference(`${DIR}/lily_tom_dad.safetensors`);
const req = { clean: 'Lily and Tom went to the park. Lily gave the ball to', corrupt: 'Lily and dad went to the park. Lily gave the ball to', good: { text: ' Tom' }, bad: { text: ' Lily' } };
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); }, 120_000);
afterAll(() => e.dispose());

const meanAbsErr = (a: ArrayLike<number>, b: ArrayLike<number>) => { let s = 0; for (let i = 0; i < a.length; i++) s += Math.abs(a[i] - b[i]); return s / a.length; };
const maxAbsErr = (a: ArrayLike<number>, b: ArrayLike<number>) => { let s = 0; for (let i = 0; i < a.length; i++) s = Math.max(s, Math.abs(a[i] - b[i])); return s; };

describe("AtP*'s QK fix on the reference pair", () => {
  it('reduces the error of the resid_pre grid against exact_resid_pre', async () => {
    const exact = ref.get('exact_resid_pre')!.data, plain = ref.get('atp_resid_pre')!.data;
    const r = await attributionPatching(e, { ...req, hook: 'resid_pre', correction: 'qk' });
    expect(r.correction).toBe('qk');
    const before = meanAbsErr(plain, exact), after = meanAbsErr(r.atpNats, exact);
    console.log(`resid_pre: mean |AtP − exact| ${before.toFixed(4)} → AtP* ${after.toFixed(4)} nats; max ${maxAbsErr(plain, exact).toFixed(4)} → ${maxAbsErr(r.atpNats, exact).toFixed(4)}`);
    expect(after).toBeLessThan(before);
    const L = e.spec.nLayers, T = r.nCols, last = (g: ArrayLike<number>) => Array.from(g).slice((L - 1) * T, L * T);
    const lastPlain = maxAbsErr(last(plain), last(exact)), lastStar = maxAbsErr(last(r.atpNats), last(exact));
    console.log(`last block: max |AtP − exact| ${lastPlain.toFixed(4)}, AtP* ${lastStar.toExponential(2)}`);
    expect(lastPlain).toBeGreaterThan(1);
    expect(lastStar).toBeLessThan(0.02);
  }, 60_000);
  it('leaves nothing to correct where source and run agree: the cells before the changed token are 0', async () => {
    const r = await attributionPatching(e, { ...req, hook: 'resid_pre', correction: 'qk' });
    const changed = r.cleanIds.findIndex((id, i) => id !== r.corruptIds[i]);
    for (let l = 0; l < r.nLayers; l++) for (let t = 0; t < changed; t++) expect(Math.abs(r.atpNats[l * r.nCols + t])).toBeLessThan(1e-6);
  }, 60_000);
  it('refuses the correction on a hook whose patch moves no query or key of its own block', async () => {
    await expect(attributionPatching(e, { ...req, hook: 'attn_out', correction: 'qk' })).rejects.toThrow(/resid_pre grid, not attn_out/);
  });
});
