/**
 * Bad input to the Mechanisms study is refused before any forward pass, with what and why: activations
 * of different models' hooks or widths, doses that are not finite, empty or one-class sets, layers
 * outside the model, set files without futures, an empty control set — in the engine and in the runner.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { checkBehaviours, type BehaviourActivations } from '../../workers/engine/analysis/mechanisms';
import { parseBehaviourSet } from '../../workers/engine/io/behaviour_set';
import { mechanismsStudy, type Behaviour } from '../../workers/engine/studies/mechanisms';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

const MODEL = sharedPath('models', 'stories260K');
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(MODEL), new CpuBackend()); }, 120_000);
afterAll(() => e.dispose());

const acts = (name: string, layers: number, width: number, n = 4): BehaviourActivations => ({
  name, width, hooks: Array.from({ length: layers }, (_, l) => `blocks.${l}.hook_resid_post`),
  rows: Array.from({ length: layers }, () => new Float32Array(n * width)), labels: Uint8Array.from({ length: n }, (_, i) => i % 2),
});

describe('activations the maths refuses', () => {
  it('refuses two behaviours read at different models\' hooks, naming both', () => {
    expect(() => checkBehaviours(acts('A', 5, 64), acts('B', 30, 64))).toThrow(/behaviours “A” and “B” were read at different hooks \(5: .* vs 30: .*\): read both from one model/);
  });
  it('refuses mismatched widths, naming both widths', () => {
    expect(() => checkBehaviours(acts('A', 5, 64), acts('B', 5, 576))).toThrow(/“A” and “B” have activations of width 64 and 576/);
  });
  it('refuses a behaviour with one example of a class, and rows that do not hold n × width values', () => {
    expect(() => checkBehaviours(acts('A', 5, 64, 3), acts('B', 5, 64))).toThrow(/“A” needs at least 2 prompts in each class .*got 1 positive, 2 negative/);
    const bad = acts('B', 5, 64);
    expect(() => checkBehaviours(acts('A', 5, 64), { ...bad, rows: [new Float32Array(3), ...bad.rows.slice(1)] })).toThrow(/“B”: row blocks\.0\.hook_resid_post holds 3 values; expected 4 prompts × width 64/);
  });
});

describe('requests the study refuses before any forward pass', () => {
  const a: Behaviour = { name: 'glad', positive: ['The cat was glad', 'The dog was glad'], negative: ['The cat was sad', 'The dog was sad'], good: { text: ' yes' }, bad: { text: ' no' } };
  const b: Behaviour = { ...a, name: 'tom', positive: ['The cat saw Tom', 'The dog saw Tom'], negative: ['The cat saw Sue', 'The dog saw Sue'] };
  const cases: [string, Parameters<typeof mechanismsStudy>[1], RegExp][] = [
    ['a dose that is NaN', { a, b, dose: NaN }, /dose NaN: give a finite number α/],
    ['a dose that is infinite', { a, b, dose: Infinity }, /dose Infinity: give a finite number α/],
    ['a dose of 0', { a, b, dose: 0 }, /dose 0: steering by 0 changes nothing/],
    ['an empty set', { a, b: { ...b, positive: [], negative: [] } }, /set B \(“tom”\) is empty/],
    ['a set with one prompt in a class', { a: { ...a, negative: ['The cat was sad'] }, b }, /set A \(“glad”\) needs at least 2 prompts in each class .*got 2 positive, 1 negative/],
    ['a set whose classes hold the same prompts', { a: { ...a, negative: a.positive }, b }, /hold the same 2 distinct prompts/],
    ['a layer outside the model', { a, b, layers: [7] }, /layer 7 does not exist \(the model has blocks 0\.\.4\)/],
    ['an empty control prompt', { a, b, control: ['fine', ' '] }, /the control set holds an empty prompt/],
  ];
  for (const [what, req, message] of cases) {
    it(`refuses ${what}`, async () => {
      const run = vi.spyOn(e, 'run');
      await expect(mechanismsStudy(e, req)).rejects.toThrow(message);
      expect(run).not.toHaveBeenCalled();
      run.mockRestore();
    });
  }
});

describe('files the study refuses', () => {
  it('refuses "suggested" futures that are not two texts, and reads them when they are', () => {
    expect(() => parseBehaviourSet('x.json', JSON.stringify({ positive: ['a b'], negative: ['c d'], suggested: { good: ' yes' } }))).toThrow(/x\.json: "suggested" must be \{"good": text, "bad": text\}/);
    expect(parseBehaviourSet('x.json', JSON.stringify({ name: 'n', positive: ['a b'], negative: ['c d'], suggested: { good: ' yes', bad: ' no' } })).futures).toEqual({ good: ' yes', bad: ' no' });
  });
});

describe('the runner refuses bad flags and files before the model loads', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mech-cli-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const base = ['mechanisms', '--model', MODEL, '--set-a', 'public/steering/happy_sad.json', '--set-b', 'public/probes/he_she.json'];
  it('refuses a dose that is not finite, naming the flag', async () => {
    const r = await runCli([...base, '--dose', 'Infinity']);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/--dose "Infinity": expected a (finite )?number/);
  });
  it('refuses a set file that names no futures, and an empty control set', async () => {
    const jsonl = path.join(dir, 'set.jsonl');
    fs.writeFileSync(jsonl, ['{"text": "a b", "label": 1}', '{"text": "c d", "label": 0}', '{"text": "e f", "label": 1}', '{"text": "g h", "label": 0}'].join('\n'));
    const r = await runCli([...base.slice(0, 4), jsonl, '--set-b', 'public/probes/he_she.json']);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/--set-a .*set\.jsonl: names no futures; add "suggested": \{"good", "bad"\} to the file or give --good-a and --bad-a/);
    const empty = path.join(dir, 'control.json');
    fs.writeFileSync(empty, '[]');
    const c = await runCli([...base, '--control', empty]);
    expect(c.code).not.toBe(0);
    expect(c.err).toMatch(/control\.json: the control set is empty/);
  }, 60_000);
});
