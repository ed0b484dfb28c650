import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';

/** The runner's `probe` and `window` commands, as a user calls them. */
const MODEL = sharedPath('models', 'stories260K');
const cli = (...args: string[]) => runCli(args);

describe('branchpoint probe', () => {
  it('prints accuracy, auroc and control_accuracy per row and first_layer_95, from a CSV set', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-probe-'));
    const csv = path.join(dir, 'set.csv');
    const names = [['Tom', 'boy'], ['Ben', 'boy'], ['Max', 'boy'], ['Lily', 'girl'], ['Sue', 'girl'], ['Mia', 'girl']];
    fs.writeFileSync(csv, 'text,label\n' + names.flatMap(([n, l]) => [`"${n} went to the park. Then",${l}`, `"${n} saw a dog. Then",${l}`]).join('\n'));
    const r = await cli('probe', '--model', MODEL, '--set', csv, '--folds', '3', '--directions', 'true');
    expect(r.err).toBe('');
    const o = JSON.parse(r.out);
    expect(o.classes).toEqual(['boy', 'girl']); // first label seen = the negative class
    expect(o.n_positive).toBe(6);
    for (const key of ['accuracy', 'auroc', 'control_accuracy', 'control_auroc']) expect(o[key]).toHaveLength(6);
    expect(o.accuracy[0]).toBe(0.5); // the same last token in every prompt
    expect(o.first_layer_95).toBe(o.accuracy.findIndex((a: number) => a >= 0.95 * Math.max(...o.accuracy)));
    expect(o.directions).toHaveLength(6);
    expect(Math.max(...o.directions[0].map(Math.abs))).toBeLessThan(1e-6); // identical vectors in both classes
  });

  it('says what is wrong with a set or a position', async () => {
    expect((await cli('probe', '--model', MODEL, '--set', '/nonexistent.json')).err).toMatch(/--set \/nonexistent\.json: no such file/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-probe-'));
    const f = path.join(dir, 's.json');
    fs.writeFileSync(f, JSON.stringify({ positive: ['a b', 'c d'], negative: ['e f', 'g h'] }));
    const bad = await cli('probe', '--model', MODEL, '--set', f, '--position', 'first');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/--position first: give "last" or a token index/);
  });
});

describe('branchpoint window', () => {
  it('prints outcome per k and point_of_no_return; k = 0 is the generation steered throughout (generate --intervention)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-window-'));
    const npy = path.join(dir, 'happy.npy');
    await cli('vector', '--model', MODEL, '--method', 'caa', '--set', path.join(__dirname, '..', '..', 'public', 'steering', 'happy_sad.json'), '--hook', 'blocks.3.hook_resid_post', '--out', npy);
    const spec = JSON.stringify({ hook: 'blocks.3.hook_resid_post', type: 'add', vector: npy, alpha: 6 });
    const common = ['--model', MODEL, '--prompt', 'The little girl felt very', '--good', ' happy', '--bad', ' sad', '--max-new-tokens', '6'];
    const w = await cli('window', ...common, '--intervention', spec, '--score', 'mean:3');
    expect(w.err).toBe('');
    const o = JSON.parse(w.out);
    expect(o.ks).toEqual([0, 1, 2, 3, 4, 5]);
    expect(o.outcome).toHaveLength(6);
    const g = JSON.parse((await cli('generate', ...common, '--intervention', spec)).out);
    expect(o.texts[0]).toBe(g.text);
    expect(o.outcome[0]).toBeCloseTo((g.margins[3] + g.margins[4] + g.margins[5]) / 3, 5);
    const u = JSON.parse((await cli('generate', ...common)).out);
    expect(o.unsteered_text).toBe(u.text);
    const flips = o.ks.filter((k: number) => Math.sign(o.outcome[k]) === -Math.sign(o.unsteered_outcome));
    expect(o.point_of_no_return).toBe(flips.length ? Math.max(...flips) : null);
  }, 180_000);

  it('needs an intervention and a well-formed score', async () => {
    const common = ['--model', MODEL, '--prompt', 'Once', '--good', ' a', '--bad', ' b', '--max-new-tokens', '4'];
    expect((await cli('window', ...common)).err).toMatch(/--intervention is required/);
    const spec = JSON.stringify({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: Array(64).fill(0.1), alpha: 1 });
    expect((await cli('window', ...common, '--intervention', spec, '--score', 'median:2')).err).toMatch(/--score median:2: use mean:M/);
    expect((await cli('window', ...common, '--intervention', spec, '--score', 'margin:9')).err).toMatch(/score step 9 is outside the generation's steps 0\.\.3/);
  });
});
