import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli_run';
import { readExperiment } from '../../workers/engine/experiment';
import { readResults, ResultsError } from '../../workers/engine/studies/export/results_file';

/**
 * The results file (studies/export/results_file.ts) round trip: `branchpoint results` writes one per
 * experiment, the importer reads it back with every number equal, the numbers equal those the
 * single-analysis commands print (margins, patch, window), and bad files are refused naming the field.
 */
const DIR = path.join(import.meta.dirname, 'experiments');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'results-'));
const CORRUPT = 'The little boy saw a dog. Then';
const written: Record<string, string> = {};
const cli: Record<string, { code: number; out: string; err: string }> = {};

beforeAll(async () => {
  const jobs: [string, string[]][] = [
    ['lens', ['results', '--experiment', path.join(DIR, 'lens.json'), '--corrupt', CORRUPT, '--out', path.join(tmp, 'lens.json')]],
    ['sweep', ['results', '--experiment', path.join(DIR, 'sweep.json'), '--out', path.join(tmp, 'sweep.json')]],
    ['steer', ['results', '--experiment', path.join(DIR, 'steer.json'), '--out', path.join(tmp, 'steer.json')]],
    ['margins', ['margins', '--experiment', path.join(DIR, 'lens.json')]],
    ['patch', ['patch', '--experiment', path.join(DIR, 'lens.json'), '--clean', readExperiment(fs.readFileSync(path.join(DIR, 'lens.json'), 'utf8')).prompt, '--corrupt', CORRUPT, '--hook', 'resid_pre']],
    ['window', ['window', '--experiment', path.join(DIR, 'steer.json')]],
  ];
  const outs = await Promise.all(jobs.map(([, args]) => runCli(args)));
  jobs.forEach(([name], i) => { cli[name] = outs[i]; });
  for (const name of ['lens', 'sweep', 'steer']) {
    expect(cli[name].code, cli[name].err).toBe(0);
    written[name] = fs.readFileSync(path.join(tmp, `${name}.json`), 'utf8');
  }
}, 300_000);

describe('results file', () => {
  it('reads back what the runner wrote, every number equal, labelled with the model and where it ran', () => {
    for (const name of ['lens', 'sweep', 'steer']) {
      const raw = JSON.parse(written[name]);
      const r = readResults(written[name]);
      expect(r.model).toBe('stories260K');
      expect(r.where_ran).toBe('branchpoint runner');
      for (const k of ['lens', 'patch', 'sweep', 'window'] as const) expect(r[k]).toEqual(raw[k]);
      expect(r.experiment).toEqual(readExperiment(fs.readFileSync(path.join(DIR, `${name}.json`), 'utf8')));
    }
    expect(Object.keys(JSON.parse(written.lens)).filter((k) => ['lens', 'patch', 'sweep', 'window'].includes(k))).toEqual(['lens', 'patch']);
    expect(JSON.parse(cli.steer.out).sections).toEqual(['lens', 'window']);
  });

  it('holds the numbers the single-analysis commands print (margins, patch, window)', () => {
    const lens = readResults(written.lens);
    const m = JSON.parse(cli.margins.out);
    expect(lens.lens!.lens_margin).toEqual(m.lens_margin);
    expect(lens.lens!.final_margin).toEqual(m.final_margin);
    expect(lens.lens!.tokens).toEqual(m.tokens);
    expect(cli.patch.code, cli.patch.err).toBe(0);
    const p = JSON.parse(cli.patch.out);
    expect(lens.patch!.recovery).toEqual(p.recovery);
    expect(lens.patch!.clean_margin).toBe(p.clean_margin);
    expect(lens.patch!.corrupt_margin).toBe(p.corrupt_margin);
    expect(cli.window.code, cli.window.err).toBe(0);
    const w = JSON.parse(cli.window.out);
    const steer = readResults(written.steer);
    expect(steer.window!.outcome).toEqual(w.outcome);
    expect(steer.window!.point_of_no_return).toBe(w.point_of_no_return);
    expect(steer.window!.unsteered_outcome).toBe(w.unsteered_outcome);
  });

  it('sweeps from the unsteered margin: dose 0 is the lens final margin at the last token', () => {
    const s = readResults(written.sweep);
    const zero = s.sweep!.doses.indexOf(0);
    expect(zero).toBeGreaterThanOrEqual(0);
    const last = s.lens!.final_margin.at(-1)!;
    expect(Math.abs(s.sweep!.unsteered_margin - last)).toBeLessThan(1e-5);
    for (const row of s.sweep!.margin) expect(Math.abs(row[zero] - last)).toBeLessThan(1e-5);
    expect(s.sweep!.margin[0].some((x) => Math.abs(x - last) > 1e-3)).toBe(true);
  });

  it('refuses bad files, saying what and why', () => {
    const base = JSON.parse(written.lens);
    const edit = (f: (o: any) => void) => { const o = structuredClone(base); f(o); return JSON.stringify(o); };
    const cases: [string, RegExp][] = [
      ['{"a":', /not valid JSON/],
      ['[]', /not a Branchpoint results file/],
      [edit((o) => { o.version = 2; }), /"version" 2; this app reads version 1/],
      [edit((o) => { o.where_ran = 'my laptop'; }), /where_ran: /],
      [edit((o) => { o.model = ''; }), /model: /],
      [edit((o) => { o.lens.lens_margin[2].pop(); }), /lens\.lens_margin\[2\]: has \d+ entries for \d+ tokens/],
      [edit((o) => { o.lens.final_margin[0] = 'x'; }), /lens\.final_margin\[0\]/],
      [edit((o) => { o.patch.recovery[0][0] = 'NaN'; }), /patch\.recovery\[0\]\[0\]/],
      [edit((o) => { o.patch.hook = 'blocks.{l}.hook_mlp_out'; }), /patch\.hook: must be blocks\.\{l\}\.hook_resid_pre/],
      [edit((o) => { o.window = { max_new_tokens: 4, ks: [0, 1], outcome: [1], unsteered_outcome: 1, point_of_no_return: 5 }; }), /window\.outcome: has 1 entries for 2 start steps.*window\.point_of_no_return: is 5/],
      [edit((o) => { o.extra = 1; }), /Unrecognized key.*extra|extra/],
      [edit((o) => { delete o.lens; delete o.patch; }), /no section/],
      [edit((o) => { o.experiment.format = 'nope'; }), /"experiment": not a Branchpoint experiment/],
      [written.lens.replace('"model":', '"model":"x","model":'), /named twice|twice/],
    ];
    cases.forEach(([text, message], i) => {
      expect(() => readResults(text), `case ${i}`).toThrow(ResultsError);
      expect(() => readResults(text), `case ${i}`).toThrow(message);
    });
  });
});
