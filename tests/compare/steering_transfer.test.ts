import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { transferJob, type TransferResult } from '../../workers/engine/studies/transfer_job';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

/**
 * Steering transfer on the base / fine-tune pair (stories260K vs stories260K-happy-ft, only block 3's
 * MLP changed): CAA vectors of one set built on both, their cosine per layer, and each vector applied
 * to both models — against the test's own CAA (last-token hook_resid_post captures through
 * Engine.run, difference of means and cosine in float64) and plain steered analyses with the
 * intervention written by hand. Known answer: the cosine is exactly 1 at blocks 0–2 (upstream of the
 * change, identical activations) and below 1 from block 3 on.
 */
const SET = { positive: ['Lily was very happy.', 'Tom felt so happy.', 'The girl was happy and smiled.'], negative: ['Lily was very sad.', 'Tom felt so sad.', 'The girl was sad and cried.'] };
const PROMPT = 'Lucy got a new ball. She was very';
const FUT = { good: { text: ' happy' }, bad: { text: ' sad' } };
const L = 5, CHANGED = 3, ALPHA = 3;
let a: Engine, b: Engine, t: TransferResult;

/** CAA per layer in float64: mean over positives − mean over negatives of blocks.l.hook_resid_post at the last token. */
async function caa(e: Engine): Promise<Float64Array[]> {
  const out = Array.from({ length: L }, () => new Float64Array(64));
  for (const [set, sign] of [[SET.positive, 1], [SET.negative, -1]] as const) {
    for (const p of set) {
      const ids = e.encodePrompt({ prompt: p }), T = ids.length;
      const names = Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_post`);
      const { captured } = await e.run(ids, { capture: names, logits: 'last' });
      names.forEach((n, l) => { const h = captured.get(n)!; for (let k = 0; k < 64; k++) out[l][k] += (sign * h[(T - 1) * 64 + k]) / set.length; });
    }
  }
  return out;
}
const cos = (x: Float64Array, y: Float64Array) => { let xy = 0, xx = 0, yy = 0; for (let k = 0; k < x.length; k++) { xy += x[k] * y[k]; xx += x[k] ** 2; yy += y[k] ** 2; } return xy / Math.sqrt(xx * yy); };
const steeredMargin = async (e: Engine, l: number, v: Float64Array) => {
  const r = await e.analyse({ prompt: PROMPT, ...FUT, interventions: [{ hook: `blocks.${l}.hook_resid_post`, op: { kind: 'add', v: Float32Array.from(v), alpha: ALPHA }, positions: 'all' }] });
  return r.finalMargin[r.ids.length - 1];
};

beforeAll(async () => {
  a = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  b = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K-happy-ft')), new CpuBackend());
  t = await transferJob(a, b, { prompt: PROMPT, ...FUT, ...SET, alpha: ALPHA });
}, 120_000);
afterAll(() => { a.dispose(); b.dispose(); });

describe('steering transfer', () => {
  it('CAA cosine per layer equals the float64 computation; exactly 1 at blocks 0–2, below 1 from block 3', async () => {
    const va = await caa(a), vb = await caa(b);
    expect(t.layers).toEqual([0, 1, 2, 3, 4]);
    for (let l = 0; l < L; l++) {
      expect(t.cosine[l]).toBeCloseTo(cos(va[l], vb[l]), 5);
      const nr = Math.sqrt(vb[l].reduce((s, x) => s + x * x, 0) / va[l].reduce((s, x) => s + x * x, 0));
      expect(t.normRatio[l]).toBeCloseTo(nr, 5);
      if (l < CHANGED) expect(t.cosine[l], `block ${l}`).toBe(1);
      else expect(t.cosine[l], `block ${l}`).toBeLessThan(0.9999);
    }
  });

  it('each vector applied to each model: the steered margins of plain analyses with the intervention written here; A\'s and B\'s vectors act alike upstream of block 3', async () => {
    const va = await caa(a), vb = await caa(b);
    for (let l = 0; l < L; l++) {
      expect(t.steered.aByA[l]).toBeCloseTo(await steeredMargin(a, l, va[l]), 3);
      expect(t.steered.bByA[l]).toBeCloseTo(await steeredMargin(b, l, va[l]), 3);
      expect(t.steered.bByB[l]).toBeCloseTo(await steeredMargin(b, l, vb[l]), 3);
      expect(t.steered.aByB[l]).toBeCloseTo(await steeredMargin(a, l, vb[l]), 3);
      if (l < CHANGED) {
        expect(t.steered.bByA[l]).toBe(t.steered.bByB[l]);
        expect(t.steered.aByB[l]).toBe(t.steered.aByA[l]);
      }
    }
    const unsteered = await b.analyse({ prompt: PROMPT, ...FUT });
    expect(t.marginB).toBe(unsteered.finalMargin[unsteered.ids.length - 1]);
    await expect(transferJob(a, b, { prompt: PROMPT, ...FUT, positive: [], negative: SET.negative })).rejects.toThrow(/both classes/);
  }, 60_000);

  it('runner: compare --caa-set prints caa_cosine and steer_margin; --alpha without the set is refused', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-transfer-'));
    try {
      fs.writeFileSync(path.join(dir, 'set.json'), JSON.stringify(SET));
      const common = ['compare', '--model', sharedPath('models', 'stories260K'), '--model-b', sharedPath('models', 'stories260K-happy-ft'), '--prompt', PROMPT, '--good', ' happy', '--bad', ' sad', '--hooks', 'mlp_out', '--threads', '1'];
      const r = await runCli([...common, '--caa-set', path.join(dir, 'set.json'), '--alpha', String(ALPHA)]);
      expect(r.code, r.err).toBe(0);
      const o = JSON.parse(r.out);
      expect(o.caa_cosine).toEqual(Array.from(t.cosine));
      expect(o.caa_cosine.slice(0, CHANGED)).toEqual([1, 1, 1]);
      expect(o.steer_margin.b_by_a).toEqual(Array.from(t.steered.bByA));
      expect(o.caa_alpha).toBe(ALPHA);
      const bad = await runCli([...common, '--alpha', '2']);
      expect(bad.code).toBe(1);
      expect(bad.err).toContain('--alpha without --caa-set');
      const absent = await runCli([...common, '--caa-set', path.join(dir, 'absent.json')]);
      expect(absent.code).toBe(1);
      expect(absent.err).toContain('--caa-set');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
