/**
 * `branchpoint mechanisms` prints the study's numbers under the keys (cos_caa, cos_probe,
 * cross_steer {a_on_a, a_on_b, b_on_b, b_on_a} with intervals, natural_corr, verdict), per block asked,
 * with the futures read from the set files and a control set joining the pool.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseLabelledSet } from '../../workers/engine/io/prompt_set';
import { mechanismsStudy } from '../../workers/engine/studies/mechanisms';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

const MODEL = sharedPath('models', 'stories260K');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mech-cli-'));
const CONTROL = ['A cat sat on the mat.', 'The sun was hot.', 'They ate some bread.'];
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(MODEL), new CpuBackend()); }, 120_000);
afterAll(() => { e.dispose(); fs.rmSync(dir, { recursive: true, force: true }); });

describe('branchpoint mechanisms', () => {
  it('prints cos_caa, cos_probe, cross_steer, natural_corr and verdict per block, equal to the study on the same sets', async () => {
    const control = path.join(dir, 'control.txt');
    fs.writeFileSync(control, CONTROL.join('\n'));
    const r = await runCli(['mechanisms', '--model', MODEL, '--set-a', 'public/steering/happy_sad.json', '--set-b', 'public/probes/he_she.json', '--control', control, '--layers', '1,3', '--dose', '5', '--causal', 'false']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as Record<string, unknown> & { cross_steer: Record<string, { mean: number; lo: number; hi: number; n: number }[]>; cos_caa: number[]; cos_probe: number[]; natural_corr: number[]; verdict: string[]; causal: Record<string, unknown> };
    const set = (f: string) => parseLabelledSet(f, fs.readFileSync(f, 'utf8'));
    const a = set('public/steering/happy_sad.json'), b = set('public/probes/he_she.json');
    const want = await mechanismsStudy(e, {
      a: { name: 'a', ...a, good: { text: ' happy' }, bad: { text: ' sad' } }, b: { name: 'b', ...b, good: { text: ' he' }, bad: { text: ' she' } },
      control: CONTROL, layers: [1, 3], dose: 5, causal: false,
    });
    expect(out.layers).toEqual([1, 3]);
    expect(out.hooks).toEqual(['blocks.1.hook_resid_post', 'blocks.3.hook_resid_post']);
    expect(out.pool).toEqual({ a: 32, b: 48, control: 3 });
    for (let i = 0; i < 2; i++) {
      expect(out.cos_caa[i]).toBeCloseTo(want.cosCaa[i]!, 10);
      expect(out.cos_probe[i]).toBeCloseTo(want.cosProbe[i]!, 10);
      expect(out.natural_corr[i]).toBeCloseTo(want.naturalCorr[i]!, 10);
      for (const [k, w] of [['a_on_a', 'aOnA'], ['a_on_b', 'aOnB'], ['b_on_b', 'bOnB'], ['b_on_a', 'bOnA']] as const) {
        expect(out.cross_steer[k][i].mean).toBeCloseTo(want.crossSteer[w][i].mean, 10);
        expect(out.cross_steer[k][i].lo).toBeCloseTo(want.crossSteer[w][i].lo, 10);
        expect(out.cross_steer[k][i].hi).toBeCloseTo(want.crossSteer[w][i].hi, 10);
      }
      expect(out.verdict[i]).toBe(want.verdict[i].kind);
    }
    expect(out.causal).toEqual({ a: 'n/a', b: 'n/a', similarity: 'n/a' });
  }, 120_000);
});
