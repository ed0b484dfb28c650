import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { readNpy } from '../../workers/engine/steering/vector_io';
import { toIntervention } from '../../workers/engine/steering/spec';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';

/**
 * `branchpoint side-effects`: the numbers it prints are those of plain forwards (reach by
 * Engine.analyse, the KL by Engine.run and this file's float64 log-softmax), the window follows
 * its flags' budgets, and bad flags are refused before any work with what and why.
 */
const MODEL = sharedPath('models', 'stories260K');
const PUB = path.join(__dirname, '..', '..', 'public');
const SET = path.join(PUB, 'steering', 'happy_sad.json');
const CONTROL = path.join(PUB, 'control', 'stories.json');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-side-'));
const npy = path.join(dir, 'happy.npy');
const iv = (hook = 'blocks.3.hook_resid_post') => JSON.stringify({ hook, type: 'add', vector: npy, alpha: 1 });
const cli = (...args: string[]) => runCli(['side-effects', '--model', MODEL, ...args]);

let e: Engine;
beforeAll(async () => {
  const v = await runCli(['vector', '--model', MODEL, '--method', 'caa', '--hook', 'blocks.3.hook_resid_post', '--set', SET, '--out', npy]);
  expect(v.code).toBe(0);
  e = await Engine.load(new NodeFiles(MODEL), new CpuBackend());
}, 60_000);
afterAll(() => e.dispose());

describe('branchpoint side-effects', () => {
  it('prints reach, kl and delta_ll per [layer][dose] equal to plain forwards, and the window the budgets give', async () => {
    const r = await cli('--intervention', iv('blocks.{l}.hook_resid_post'), '--set', SET, '--control', CONTROL, '--doses', '3,0', '--layers', '2,3', '--kl-budget', '0.5', '--ll-budget', '0.5');
    expect(r.code, r.err).toBe(0);
    const o = JSON.parse(r.out);
    expect(o.doses).toEqual([0, 3]);
    expect(o.hooks).toEqual(['blocks.2.hook_resid_post', 'blocks.3.hook_resid_post']);
    const vector = Array.from(readNpy(new Uint8Array(fs.readFileSync(npy))));
    const set = JSON.parse(fs.readFileSync(SET, 'utf8')) as { positive: string[]; negative: string[] };
    const control = (JSON.parse(fs.readFileSync(CONTROL, 'utf8')) as { texts: string[] }).texts;
    const V = e.spec.dVocab;
    const lsm = (row: Float32Array) => { const m = Math.max(...row); const z = Math.log(row.reduce((s, x) => s + Math.exp(x - m), 0)) + m; return Array.from(row, (x) => x - z); };
    for (const [li, hook] of o.hooks.entries()) {
      const add = (n: number) => toIntervention({ hook, type: 'add', vector, alpha: 3 }, e.spec, { nPrompt: n });
      let reach = 0;
      for (const prompt of [...set.positive, ...set.negative]) {
        const q = { prompt, good: { text: ' happy' }, bad: { text: ' sad' } };
        reach += (await e.analyse({ ...q, interventions: [add(e.encodePrompt(q).length)] })).sequenceMargin - (await e.analyse(q)).sequenceMargin;
      }
      let kl = 0, n = 0;
      for (const text of control) {
        const ids = e.encodePrompt({ prompt: text });
        const p = (await e.run(ids)).logits, s = (await e.run(ids, { interventions: [add(ids.length)] })).logits;
        for (let t = 0; t < ids.length; t++, n++) {
          const lp = lsm(p.subarray(t * V, (t + 1) * V)), lq = lsm(s.subarray(t * V, (t + 1) * V));
          lp.forEach((x, i) => { kl += Math.exp(x) * (x - lq[i]); });
        }
      }
      expect(Math.abs(o.reach[li][1] - reach / 32)).toBeLessThan(1e-5);
      expect(Math.abs(o.kl[li][1] - kl / n)).toBeLessThan(1e-5);
      expect(o.reach_lo[li][1]).toBeLessThan(o.reach[li][1]);
      expect(o.reach_hi[li][1]).toBeGreaterThan(o.reach[li][1]);
      expect(o.kl[li][0]).toBe(0);
      expect(o.delta_ll[li][0]).toBe(0);
      expect(o.window[li]).toEqual(o.pass[li][1] ? [3, 3] : null);
      expect(o.pass[li][1]).toBe(o.reach[li][1] >= 1 && o.kl[li][1] <= 0.5 && o.delta_ll[li][1] >= -0.5);
    }
    expect(o.budgets).toEqual({ reach: 1, kl: 0.5, ll: 0.5, other: 0.5 });
  }, 180_000);

  it('one hook without --layers prints flat arrays and window null when nothing passes', async () => {
    const r = await cli('--intervention', iv(), '--set', SET, '--control', CONTROL, '--doses', '0,1', '--reach', '50');
    expect(r.code, r.err).toBe(0);
    const o = JSON.parse(r.out);
    expect(o.window).toBeNull();
    expect(o.kl).toHaveLength(2);
    expect(o.why[1]).toContain(`reach ${o.reach[1].toPrecision(3)} < R = 50`);
  }, 60_000);

  it.each([
    [['--doses', '0,Infinity'], '--doses "0,Infinity": expected comma-separated finite numbers'],
    [['--doses', '0,1', '--kl-budget', '-0.1'], '--kl-budget -0.1 is negative: a budget is the most a side effect may cost'],
    [['--doses', '0,1', '--ll-budget', '-2'], '--ll-budget -2 is negative'],
  ])('refuses %j before the model loads', async (flags, message) => {
    const r = await cli('--intervention', iv(), '--set', SET, '--control', CONTROL, ...flags);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain(message);
  });

  it('refuses an empty control set, two interventions and a hook the model lacks', async () => {
    const empty = path.join(dir, 'empty.json');
    fs.writeFileSync(empty, '{"texts": []}');
    const a = await cli('--intervention', iv(), '--set', SET, '--control', empty, '--doses', '0,1');
    expect(a.err).toContain(`${empty}: the control set is empty; side effects are read on unrelated text`);
    const b = await cli('--intervention', iv(), '--intervention', iv(), '--set', SET, '--control', CONTROL, '--doses', '0,1');
    expect(b.err).toContain('--intervention: side-effects varies the dose of exactly one intervention; got 2');
    const c = await cli('--intervention', iv('blocks.9.hook_resid_post'), '--set', SET, '--control', CONTROL, '--doses', '0,1');
    expect(c.err).toContain('the intervention: hook "blocks.9.hook_resid_post": layer 9 does not exist (the model has layers 0..4)');
    for (const r of [a, b, c]) { expect(r.code).not.toBe(0); expect(r.out).toBe(''); }
  }, 60_000);
});
