import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { probeLayers } from '../../workers/engine/studies/probe';
import { firstAt95 } from '../../workers/engine/studies/report';
import { toIntervention } from '../../workers/engine/steering/spec';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

/**
 * `branchpoint report --intervention … --max-new-tokens N --set FILE`: the changeable panel's
 * outcome per start step against plain steered generations (Engine.generate), and the probe's
 * first row at 95 % against the probe module on the same file.
 */
const MODEL = sharedPath('models', 'stories260K');
const CLEAN = 'Lily and Tom went to the park. Lily gave the ball to';
const CORRUPT = 'Tom and Lily went to the park. Lily gave the ball to';
const HOOK = 'blocks.3.hook_resid_post';
const N = 5;
const SET = { classes: ['girl', 'boy'] as [string, string], positive: ['Tom went to the park. Then', 'Ben found a big red ball. Then', 'Tim saw a little dog. Then'], negative: ['Lily went to the park. Then', 'Sue found a big red ball. Then', 'Mia saw a little dog. Then'] };
let e: Engine;
let dir: string;
let girl: number[];

beforeAll(async () => {
  e = await Engine.load(new NodeFiles(MODEL), new CpuBackend());
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-report-'));
  fs.writeFileSync(path.join(dir, 'set.json'), JSON.stringify(SET));
  girl = Array.from((await probeLayers(e, SET)).directions[4], (x) => -x);
}, 120_000);
afterAll(() => {
  e.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

const base = ['report', '--model', MODEL, '--clean', CLEAN, '--corrupt', CORRUPT, '--good', ' Tom', '--bad', ' Lily'];

describe('branchpoint report with an intervention and a labelled set', () => {
  it('prints the window outcome per start step (= generations steered from step k) and its point of no return', async () => {
    const spec = { hook: HOOK, type: 'add' as const, vector: girl, alpha: 20 };
    const { code, out, err } = await runCli([...base, '--intervention', JSON.stringify(spec), '--max-new-tokens', String(N)]);
    expect(err).toBe('');
    expect(code).toBe(0);
    const r = JSON.parse(out) as { window_ks: number[]; window_outcome: number[]; window_unsteered_outcome: number; point_of_no_return: number | null; first_layer_95: number | null };
    expect(r.window_ks).toEqual([0, 1, 2, 3, 4]);
    const iv = toIntervention({ ...spec, vector: Float32Array.from(girl) }, e.spec, { nPrompt: e.encodePrompt({ prompt: CLEAN }).length, maxNewTokens: N });
    const mean = async (k: number | null) => {
      const g = await e.generate({ prompt: CLEAN, good: { text: ' Tom' }, bad: { text: ' Lily' }, maxNewTokens: N, stopAtEos: false, interventions: k === null ? [] : [{ ...iv, steps: { start: k, end: Infinity } }] });
      return g.margins.reduce((s, m) => s + m, 0) / N;
    };
    const unsteered = await mean(null);
    expect(r.window_unsteered_outcome).toBeCloseTo(unsteered, 4);
    const want: number[] = [];
    for (const k of r.window_ks) want.push(await mean(k));
    r.window_outcome.forEach((o, k) => expect(o).toBeCloseTo(want[k], 4));
    const flips = r.window_ks.filter((k) => Math.sign(want[k]) !== Math.sign(unsteered));
    expect(r.point_of_no_return).toBe(flips.length ? Math.max(...flips) : null);
    expect(r.point_of_no_return).not.toBeNull();
    expect(r.first_layer_95).toBeNull();
  }, 180_000);

  it('with --set: the probe’s first row at 95 % of the set, intervals over its prompts; bad flags say what is wrong', async () => {
    const { code, out, err } = await runCli([...base, '--set', path.join(dir, 'set.json')]);
    expect(err).toBe('');
    expect(code).toBe(0);
    const r = JSON.parse(out) as { n_prompts: number; first_layer_95: number; first_layer_95_interval: [number, number]; probe_accuracy: number[]; probe_classes: string[]; visible_interval: unknown; point_of_no_return: null };
    const p = await probeLayers(e, SET);
    expect(r.probe_accuracy).toEqual(p.accuracy);
    expect(r.first_layer_95).toBe(firstAt95(p.accuracy));
    expect(r.probe_classes).toEqual(['girl', 'boy']);
    expect(r.n_prompts).toBe(7);
    expect(r.first_layer_95_interval[0]).toBeLessThanOrEqual(r.first_layer_95_interval[1]);
    expect(r.point_of_no_return).toBeNull();
    const noIv = await runCli([...base, '--max-new-tokens', '4']);
    expect(noIv.code).not.toBe(0);
    expect(noIv.err).toContain('--max-new-tokens without --intervention');
    const noFile = await runCli([...base, '--set', path.join(dir, 'absent.json')]);
    expect(noFile.code).not.toBe(0);
    expect(noFile.err).toContain('no such file');
  }, 180_000);
});
