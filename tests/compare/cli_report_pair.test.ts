import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

/**
 * `branchpoint report --model-b`: the report on both models of the base / fine-tune pair, each side
 * equal key for key to `report` run on that model alone (the same flags: prompt pair, labelled set,
 * intervention window), and B − A of each answer; a pair of different depths is refused.
 */
const A = sharedPath('models', 'stories260K'), B = sharedPath('models', 'stories260K-happy-ft');
const SET = { classes: ['plain', 'emotional'], positive: ['Tom played in the rain. He was very', 'Lucy got a new ball. She was very'], negative: ['Tom played in the rain. He had a', 'Lucy got a new ball. She saw a'] };
// a steering vector at block 1 (upstream of the changed MLP, so it acts alike on both models): along d_model axis 0
const SPEC = { hook: 'blocks.1.hook_resid_post', type: 'add', vector: Array.from({ length: 64 }, (_, i) => (i === 0 ? 1 : 0)), alpha: -40 };
let dir: string;
const base = () => ['report', '--clean', 'Lucy got a new ball. She was very', '--corrupt', 'Lucy got a new ball. She saw a', '--good', ' happy', '--bad', ' sad',
  '--set', path.join(dir, 'set.json'), '--folds', '2', '--intervention', JSON.stringify(SPEC), '--max-new-tokens', '3', '--threads', '1'];

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-report-pair-'));
  fs.writeFileSync(path.join(dir, 'set.json'), JSON.stringify(SET));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('branchpoint report --model-b', () => {
  it('prints each model\'s report (equal to report on that model alone) and B − A of visible layer, causal layer and point of no return', async () => {
    const [pair, onA, onB] = await Promise.all([
      runCli([...base(), '--model', A, '--model-b', B]), runCli([...base(), '--model', A]), runCli([...base(), '--model', B]),
    ]);
    for (const r of [pair, onA, onB]) expect(r.code, r.err).toBe(0);
    const o = JSON.parse(pair.out), a = JSON.parse(onA.out), b = JSON.parse(onB.out);
    expect(o.a).toEqual(a);
    expect(o.b).toEqual(b);
    expect(o.label_a).toContain('stories260K');
    expect(o.label_b).toContain('happy-ft');
    const diff = (x: number | null, y: number | null) => (x === null || y === null ? null : y - x);
    expect(o.difference.visible_layer).toMatchObject({ a: a.visible_layer, b: b.visible_layer, value: diff(a.visible_layer, b.visible_layer), n_paired: 5 });
    expect(o.difference.causal_layer).toMatchObject({ a: a.causal_layer, b: b.causal_layer, value: diff(a.causal_layer, b.causal_layer) });
    expect(o.difference.point_of_no_return).toMatchObject({ a: a.point_of_no_return, b: b.point_of_no_return, value: diff(a.point_of_no_return, b.point_of_no_return) });
    for (const k of ['visible_layer', 'causal_layer', 'point_of_no_return']) {
      const d = o.difference[k];
      if (d.interval) expect(d.interval[0]).toBeLessThanOrEqual(d.interval[1]);
    }
    expect(o.difference.visible_layer.interval).not.toBeNull();
  }, 240_000);

  it('refuses model B of another depth (exit 1), naming both', async () => {
    const r = await runCli(['report', '--model', A, '--model-b', sharedPath('models', 'aidreams260K'), '--clean', 'Lucy got a new ball. She was very', '--corrupt', 'Lucy got a new ball. She saw a', '--good', ' happy', '--bad', ' sad', '--threads', '1']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/has 5 layers, model B \[.*aidreams260K.*\] 4/);
  }, 120_000);
});
