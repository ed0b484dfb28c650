import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { runBatch } from '../../workers/engine/studies/batch/batch';
import { parseTemplate } from '../../workers/engine/studies/batch/template';
import { parseValues } from '../../workers/engine/studies/batch/values';
import { patchingGrid } from '../../workers/engine/studies/patching';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import { rowMargin } from '../../workers/engine/analysis/margin';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';
import type { Intervention } from '../../workers/engine/model/intervention';
import { runCli } from '../cli_run';
import { readReference, sharedPath } from '../shared';

/**
 * The batch columns that need settings: probe_score (a direction's projection at a hook) against
 * the golden hidden states of stories260K, and patch_recovery at one cell against the naive
 * patching loop of studies/patching.ts (one full forward per cell); both from the runner too.
 */
const MODEL = sharedPath('models', 'stories260K');
const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8')) as { prompts: { name: string; prompt: string; n_prompt: number; n_positions: number }[] };
const NAME_SWAP = parseTemplate(fs.readFileSync(path.join(__dirname, '..', '..', 'public', 'studies', 'name_swap.template.json'), 'utf8'));
const D = 64;
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(MODEL), new CpuBackend()); });
afterAll(() => e.dispose());

/** A seeded direction of width d. */
const direction = (seed: number) => { const r = seededRandom(seed); return Float32Array.from({ length: D }, () => r() - 0.5); };

describe('batch columns probe_score and patch_recovery', () => {
  it('probe_score is h·v/‖v‖ of the golden residual stream after block 2 at the last prompt token', async () => {
    const v = direction(7);
    const prompts = ref.prompts;
    const values = parseValues(`prompt,good,bad\n${prompts.map((p) => `"${p.prompt}", Tom, Lily`).join('\n')}\n`, 'csv');
    const r = await runBatch(e, { template: { prompt: '{prompt}', good: '{good}', bad: '{bad}' }, values, probe: { hook: 'blocks.2.hook_resid_post', vector: v } });
    expect(r.metrics).toContain('probe_score');
    const norm = Math.hypot(...v);
    for (const [i, p] of prompts.entries()) {
      const arrays = readReference(sharedPath(`models/stories260K/reference/${p.name}.safetensors`));
      const t = p.n_prompt - 1;
      const h = arrays.get('resid_post')!.data.subarray((2 * p.n_positions + t) * D, (2 * p.n_positions + t + 1) * D);
      const want = h.reduce((s, x, j) => s + x * v[j], 0) / norm;
      expect(r.rows[i].metrics.probe_score, p.name).toBeCloseTo(want, 4);
    }
  });

  it('patch_recovery at (resid_pre, layer 2, last position) equals the naive patching grid’s cell, for each name-swap prompt and its corrupt variant', async () => {
    const values = parseValues('first,second,giver,receiver,giver_is\nLily,Tom,Lily,Tom,first\nTom,Lily,Lily,Tom,second\nBen,Sue,Sue,Ben,second\n', 'csv');
    const r = await runBatch(e, { template: NAME_SWAP, values, patchCell: { hook: 'resid_pre', layer: 2, position: -1 }, metrics: ['final_margin', 'patch_recovery'] });
    for (const row of r.rows) {
      expect(row.error).toBeUndefined();
      const corrupt = `${row.vars.second} and ${row.vars.first} went to the park. ${row.vars.giver} gave the ball to`;
      const g = await patchingGrid(e, { clean: row.prompt, corrupt, good: { text: row.good }, bad: { text: row.bad }, hook: 'resid_pre', reuse: false });
      expect(row.metrics.patch_recovery).toBeCloseTo(g.recovery[2 * g.nCols + g.nCols - 1], 5);
      expect(row.metrics.final_margin).toBeCloseTo(g.cleanMargin, 5);
    }
    // A head of attn.hook_z is a cell too.
    const z = await runBatch(e, { template: NAME_SWAP, values: parseValues('first,second,giver,receiver,giver_is\nLily,Tom,Lily,Tom,first\n', 'csv'), patchCell: { hook: 'z', layer: 1, position: 3 }, metrics: ['patch_recovery'] });
    const gz = await patchingGrid(e, { clean: z.rows[0].prompt, corrupt: 'Tom and Lily went to the park. Lily gave the ball to', good: { text: ' Tom' }, bad: { text: ' Lily' }, hook: 'z', reuse: false });
    expect(z.rows[0].metrics.patch_recovery).toBeCloseTo(gz.recovery[1 * gz.nCols + 3], 5);
  });

  it('patch_recovery applies the study’s interventions in the clean, corrupted and patched runs: r from three plain forwards under them', async () => {
    const values = parseValues('first,second,giver,receiver,giver_is\nLily,Tom,Lily,Tom,first\n', 'csv');
    const steer: Intervention = { hook: 'blocks.1.hook_resid_post', op: { kind: 'add', v: direction(11), alpha: 3 }, positions: 'all' };
    const cell = { hook: 'resid_pre' as const, layer: 2, position: -1 };
    const steered = await runBatch(e, { template: NAME_SWAP, values, patchCell: cell, metrics: ['patch_recovery'], interventions: () => [steer] });
    const plain = await runBatch(e, { template: NAME_SWAP, values, patchCell: cell, metrics: ['patch_recovery'] });
    const clean = steered.rows[0].prompt, corrupt = 'Tom and Lily went to the park. Lily gave the ball to';
    const cleanIds = e.encodePrompt({ prompt: clean }), corruptIds = e.encodePrompt({ prompt: corrupt });
    const T = cleanIds.length;
    const good = e.resolveFuture(cleanIds, { text: steered.rows[0].good }, { prompt: clean }).firstIds;
    const bad = e.resolveFuture(cleanIds, { text: steered.rows[0].bad }, { prompt: clean }).firstIds;
    const delta = (logits: Float32Array) => rowMargin(logSoftmaxCpu(logits, logits.length), good, bad);
    const hook = 'blocks.2.hook_resid_pre';
    const c = await e.run(cleanIds, { capture: [hook], interventions: [steer], logits: 'last' });
    const k = await e.run(corruptIds, { interventions: [steer], logits: 'last' });
    const patch: Intervention = { hook, op: { kind: 'patch', replacement: c.captured.get(hook)! }, positions: [T - 1] };
    const p = await e.run(corruptIds, { interventions: [steer, patch], logits: 'last' });
    const want = (delta(p.logits) - delta(k.logits)) / (delta(c.logits) - delta(k.logits));
    expect(steered.rows[0].metrics.patch_recovery).toBeCloseTo(want, 4);
    // the intervention matters here, so a batch that dropped it would fail the line above
    expect(Math.abs(plain.rows[0].metrics.patch_recovery! - want)).toBeGreaterThan(1e-2);
  });

  it('refuses the columns without their settings, before anything runs; a cell outside a prompt is that row’s error', async () => {
    const values = parseValues('prompt,good,bad\nOnce upon a time, there, the\n', 'csv');
    const t = { prompt: '{prompt}', good: '{good}', bad: '{bad}' };
    await expect(runBatch(e, { template: t, values, metrics: ['probe_score'] })).rejects.toThrow(/probe_score needs a direction/);
    await expect(runBatch(e, { template: t, values, probe: { hook: 'blocks.0.hook_resid_post', vector: new Float32Array(3) } })).rejects.toThrow(/3 values; blocks.0.hook_resid_post is 64 wide/);
    await expect(runBatch(e, { template: t, values, patchCell: { hook: 'resid_pre', layer: 0, position: 0 } })).rejects.toThrow(/"corrupt" template/);
    const r = await runBatch(e, { template: NAME_SWAP, values: parseValues('first,second,giver,receiver,giver_is\nLily,Tom,Lily,Tom,first\n', 'csv'), patchCell: { hook: 'resid_pre', layer: 0, position: 99 } });
    expect(r.rows[0].error).toMatch(/position 99 is outside the 21 positions/);
  });

  it('the runner prints both columns: --probe-vector FILE --probe-hook, --patch-cell resid_pre:2:-1 (rows = runBatch’s)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-batch-cols-'));
    try {
      const v = direction(3);
      fs.writeFileSync(path.join(dir, 'v.json'), JSON.stringify({ vector: Array.from(v) }));
      const values = 'first,second,giver,receiver,giver_is\nLily,Tom,Lily,Tom,first\nSue,Ben,Ben,Sue,second\n';
      fs.writeFileSync(path.join(dir, 'values.csv'), values);
      const { code, out, err } = await runCli(['batch', '--model', MODEL, '--template', 'public/studies/name_swap.template.json', '--values', path.join(dir, 'values.csv'),
        '--probe-vector', path.join(dir, 'v.json'), '--probe-hook', 'blocks.1.hook_resid_post', '--patch-cell', 'resid_pre:2:-1']);
      expect(err).toBe('');
      expect(code).toBe(0);
      const lines = out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, number>);
      const want = await runBatch(e, { template: NAME_SWAP, values: parseValues(values, 'csv'), probe: { hook: 'blocks.1.hook_resid_post', vector: v }, patchCell: { hook: 'resid_pre', layer: 2, position: -1 } });
      for (const [i, row] of want.rows.entries()) {
        expect(lines[i].probe_score).toBeCloseTo(row.metrics.probe_score!, 5);
        expect(lines[i].patch_recovery).toBeCloseTo(row.metrics.patch_recovery!, 5);
      }
      expect(Object.keys((lines[2] as unknown as { aggregate: { overall: object } }).aggregate.overall)).toEqual(expect.arrayContaining(['probe_score', 'patch_recovery']));
      const bad = await runCli(['batch', '--model', MODEL, '--template', 'public/studies/name_swap.template.json', '--values', path.join(dir, 'values.csv'), '--patch-cell', 'resid_pre:two:-1']);
      expect(bad.code).not.toBe(0);
      expect(bad.err).toContain('write HOOK:LAYER:POSITION');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
