import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';

/**
 * `branchpoint probe … --under JSON` as a user calls it: the keys it adds, its margins against plain
 * forwards here, and every bad --under refused with what and why before the model is loaded (or,
 * for a hook the model lacks, before any forward pass).
 */
const MODEL = sharedPath('models', 'stories260K');
const SET = 'public/probes/he_she.json';
const cli = (...args: string[]) => runCli(args);
const HOOK = 'blocks.2.hook_resid_post';

let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(MODEL), new CpuBackend()); }, 120_000);
afterAll(() => e.dispose());

describe('branchpoint probe --under', () => {
  it('adds accuracy_steered, auroc_steered, score_shift, behaviour_shift and flag; the margins are those of plain forwards', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-under-'));
    const v = path.join(dir, 'v.json');
    const vector = Array.from({ length: e.spec.dModel }, (_, j) => (j % 7) / 7 - 0.4);
    fs.writeFileSync(v, JSON.stringify(vector));
    const r = await cli('probe', '--model', MODEL, '--set', SET, '--under', JSON.stringify({ hook: HOOK, type: 'add', vector: v, alpha: 3 }), '--generate', '2');
    expect(r.err).toBe('');
    const o = JSON.parse(r.out);
    for (const k of ['accuracy', 'accuracy_steered', 'auroc_steered', 'score_shift', 'score_gap', 'flag']) expect(o[k]).toHaveLength(6);
    for (const k of ['mean', 'lo', 'hi']) expect(Number.isFinite(o.behaviour_shift[k])).toBe(true);
    expect(o.score_shift.slice(0, 3).map((s: { mean: number }) => s.mean)).toEqual([0, 0, 0]); // rows before the hook
    expect(o.reached).toEqual([false, false, false, true, true, true]);
    expect(o.flag.slice(0, 3)).toEqual([null, null, null]);
    expect(o.target_rate.new_tokens).toBe(2);
    // the first two prompts' margins log p(" he") − log p(" she"), the futures the set suggests, against plain forwards
    const add = { hook: HOOK, type: 'add' as const, vector, alpha: 3 };
    const { toIntervention, parseSpec } = await import('../../workers/engine/steering/spec');
    const set = JSON.parse(fs.readFileSync(SET, 'utf8')) as { positive: string[] };
    for (const [i, prompt] of set.positive.slice(0, 2).entries()) {
      const ids = e.encodePrompt({ prompt });
      for (const [key, ivs] of [['margin_unsteered', []], ['margin_steered', [toIntervention(parseSpec(add, 't'), e.spec, { nPrompt: ids.length }, 't')]]] as const) {
        const { logits } = await e.run(ids, { interventions: ivs, logits: 'last' });
        const [he] = e.resolveFuture(ids, { text: ' he' }, { prompt }).firstIds, [she] = e.resolveFuture(ids, { text: ' she' }, { prompt }).firstIds;
        expect(Math.abs(o[key][i] - (logits[he] - logits[she]))).toBeLessThan(1e-5);
      }
    }
  });

  it('refuses --under that does not parse, a non-finite dose and flags without --under before the model loads; a hook the model lacks before any forward pass', async () => {
    const nowhere = path.join(os.tmpdir(), 'no-such-model-dir');
    const notJson = await cli('probe', '--model', nowhere, '--set', SET, '--under', '{hook: blocks.2}');
    expect(notJson.code).toBe(1);
    expect(notJson.err).toMatch(/--under: not valid JSON/);
    const inf = await cli('probe', '--model', nowhere, '--set', SET, '--under', `{"hook":"${HOOK}","type":"add","vector":[1],"alpha":1e999}`);
    expect(inf.code).toBe(1);
    expect(inf.err).toMatch(/--under: "alpha" must be a finite number \(got Infinity\)/);
    const alone = await cli('probe', '--model', nowhere, '--set', SET, '--good', ' he');
    expect(alone.err).toMatch(/--good goes with --under JSON/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-under-'));
    const plain = path.join(dir, 's.json');
    fs.writeFileSync(plain, JSON.stringify({ positive: ['Tom ran. Then', 'Ben sat. Then'], negative: ['Lily ran. Then', 'Sue sat. Then'] }));
    const noFutures = await cli('probe', '--model', nowhere, '--set', plain, '--under', `{"hook":"${HOOK}","type":"add","vector":[1],"alpha":1}`);
    expect(noFutures.err).toMatch(/give --good and --bad \(.*s\.json suggests none\)/);
    const hook = await cli('probe', '--model', MODEL, '--set', SET, '--under', '{"hook":"blocks.9.hook_resid_post","type":"add","vector":[1],"alpha":1}');
    expect(hook.code).toBe(1);
    expect(hook.err).toMatch(/--under: hook "blocks\.9\.hook_resid_post": layer 9 does not exist \(the model has layers 0\.\.4\)/);
  });
});
