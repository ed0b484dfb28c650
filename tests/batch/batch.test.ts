import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { flatRow, runBatch } from '../../workers/engine/studies/batch/batch';
import { parseTemplate } from '../../workers/engine/studies/batch/template';
import { parseValues } from '../../workers/engine/studies/batch/values';
import { summarize } from '../../workers/engine/studies/batch/aggregate';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

/** Batch studies on stories260K: each row is the prompt's own analysis; the shipped examples; the runner. */
const MODEL = sharedPath('models', 'stories260K');
const STUDIES = path.join(__dirname, '..', '..', 'public', 'studies');
const read = (f: string) => fs.readFileSync(path.join(STUDIES, f), 'utf8');
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(MODEL), new CpuBackend()); });
afterAll(() => e.dispose());

describe('runBatch', () => {
  it('each row\'s metrics are those of Engine.analyse on that prompt; a bad row is reported and the batch goes on', async () => {
    const long = 'the dog ran '.repeat(300); // longer than the 512-token context
    const values = parseValues(`prompt,good,bad\nLily and Tom went to the park. Lily gave the ball to, Tom, Lily\n"Once upon a time", there,| the\n${long}, a, b\n`, 'csv');
    const r = await runBatch(e, { template: { prompt: '{prompt}', good: '{good}', bad: '{bad}' }, values });
    expect(r.rows).toHaveLength(3);
    const a = await e.analyse({ prompt: 'Lily and Tom went to the park. Lily gave the ball to', good: { text: ' Tom' }, bad: { text: ' Lily' } });
    const T = a.ids.length;
    expect(r.rows[0].metrics.final_margin).toBe(a.finalMargin[T - 1]);
    expect(r.rows[0].metrics.sequence_margin).toBe(a.sequenceMargin);
    expect(r.rows[0].metrics.sink_rate).toBeCloseTo(Array.from(a.sinks.sinkRate).reduce((s, x) => s + x, 0) / a.nLayers, 12);
    expect(r.rows[1].metrics.final_margin).not.toBeNull();
    expect(r.rows[2].error).toMatch(/longer than the model's context of 512 tokens/);
    expect(r.rows[2].metrics.final_margin).toBeNull();
  });

  it('an intervention at an explicit position acts at that absolute index on every row; a row too short for it is refused with its reason', async () => {
    const spec = parseSpec({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: Array.from({ length: e.spec.dModel }, (_, i) => Math.sin(i + 1)), alpha: 8, positions: [12] });
    const long = 'Lily and Tom went to the park. Lily gave the ball to';
    const values = parseValues(`prompt,good,bad\nOnce upon a time, there, a\n${long}, Tom, Lily\n`, 'csv');
    const r = await runBatch(e, { template: { prompt: '{prompt}', good: '{good}', bad: '{bad}' }, values, interventions: (p) => [toIntervention(spec, e.spec, { nPrompt: p.nPrompt })] });
    const nShort = r.rows[0].nTokens;
    expect(nShort).toBeLessThanOrEqual(12);
    expect(r.rows[0].error).toBe(`intervention: position 12 is outside the run: the prompt has ${nShort} tokens (positions 0..${nShort - 1})`);
    expect(r.rows[0].metrics.final_margin).toBeNull();
    // The long row: the same as the intervention placed at absolute position 12 of that prompt, not counted from its end.
    const T = r.rows[1].nTokens;
    expect(T).toBeGreaterThan(13);
    const at = async (pos: number) => (await e.analyse({ prompt: long, good: { text: ' Tom' }, bad: { text: ' Lily' }, interventions: [toIntervention({ ...spec, positions: [pos] }, e.spec, { nPrompt: T })] })).finalMargin[T - 1];
    expect(r.rows[1].error).toBeUndefined();
    expect(r.rows[1].metrics.final_margin).toBe(await at(12));
    expect(r.rows[1].metrics.final_margin).not.toBe(await at(T - 1));
  });

  it('cancel keeps the finished rows', async () => {
    const ctrl = new AbortController();
    const values = parseValues(read('name_swap.values.csv'), 'csv');
    const r = await runBatch(e, { template: parseTemplate(read('name_swap.template.json')), values, metrics: ['final_margin'] }, undefined, (p) => { if (p.done === 3) ctrl.abort(); }, ctrl.signal);
    expect(r.cancelled).toBe(true);
    expect(r.rows).toHaveLength(3);
    expect(r.total).toBe(values.rows.length);
  });

  it('the distractor example shows the first drop of ink: the evidence margin falls most at the first distractor', async () => {
    const template = parseTemplate(read('distractor.template.json'));
    const r = await runBatch(e, { template, values: parseValues(read('distractor.values.jsonl')), metrics: ['sequence_margin'] });
    const s = summarize(r.rows, r.metrics, template.x);
    const means = s.groups.map((g) => g.stats.sequence_margin!.mean);
    expect(s.groups.map((g) => g.x)).toEqual([0, 1, 2, 3, 4]);
    expect(means[0]).toBeGreaterThan(means[4]);
    const drops = means.slice(1).map((m, i) => means[i] - m);
    expect(drops[0]).toBe(Math.max(...drops));
  });

  it('the runner prints one JSON row per prompt (as flatRow writes them) and the aggregate', async () => {
    const cli = await runCli(['batch', '--model', MODEL, '--template', path.join(STUDIES, 'name_swap.template.json'), '--values', path.join(STUDIES, 'name_swap.values.csv'), '--metric', 'final_margin,sink_rate']);
    expect(cli.code).toBe(0);
    const lines = cli.out.trim().split('\n').map((l) => JSON.parse(l));
    const values = parseValues(read('name_swap.values.csv'), 'csv');
    expect(lines).toHaveLength(values.rows.length + 1);
    const r = await runBatch(e, { template: parseTemplate(read('name_swap.template.json')), values, metrics: ['final_margin', 'sink_rate'] });
    r.rows.forEach((row, i) => expect(lines[i]).toEqual(flatRow(row, values.columns, r.metrics)));
    const agg = lines.at(-1).aggregate;
    expect(agg.by).toBe('giver_is');
    expect(agg.groups.map((g: { value: string }) => g.value)).toEqual(['first', 'second']);
    expect(agg.groups[0].stats.final_margin.mean).toBeCloseTo(summarize(r.rows, r.metrics, 'giver_is').groups[0].stats.final_margin!.mean, 12);
  });

  it('the runner refuses a template variable without a column before running anything', async () => {
    const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'bp-batch-'));
    fs.writeFileSync(path.join(dir, 't.json'), '{"prompt": "{who} went", "good": " a", "bad": " b"}');
    fs.writeFileSync(path.join(dir, 'v.csv'), 'name\nTom\n');
    const cli = await runCli(['batch', '--model', MODEL, '--template', path.join(dir, 't.json'), '--values', path.join(dir, 'v.csv')]);
    expect(cli.code).toBe(1);
    expect(cli.err).toMatch(/\{who\} has no column in the values table \(columns: name\)/);
    expect(cli.out).toBe('');
  });
});
