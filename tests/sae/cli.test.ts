import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';
import { SAE_DIRS } from './sae_files';

/** `branchpoint sae` against the SAE references, and SAE interventions in margins/generate/sweep. */
const MODEL = sharedPath('models', 'stories260K');
const HOOK = 'blocks.2.hook_resid_post';

interface RefPrompt { key: string; prompt: string; input_ids: number[]; positions: { l0: number; mse: number; top16_indices: number[]; top16_values: number[] }[] }

describe('branchpoint sae', () => {
  it.each(['relu', 'jumprelu'] as const)('%s: ids, top_features, l0 and mse per token equal reference.json; explained_variance follows from them', async (kind) => {
    const ref = JSON.parse(fs.readFileSync(`${SAE_DIRS[kind]}/reference.json`, 'utf8')) as { prompts: RefPrompt[] };
    const p = ref.prompts.find((q) => q.key === 'lily_tom_ball')!;
    const r = await runCli(['sae', '--model', MODEL, '--sae', SAE_DIRS[kind], '--prompt', p.prompt, '--top-k', '4']);
    expect(r.err).toBe('');
    const out = JSON.parse(r.out);
    expect(out.ids).toEqual(p.input_ids);
    expect(out.hook).toBe(HOOK);
    expect(out.l0).toEqual(p.positions.map((q) => q.l0));
    out.top_features.forEach((tf: { indices: number[]; values: number[] }, t: number) => {
      const n = Math.min(4, p.positions[t].l0);
      expect(tf.indices.slice(0, n)).toEqual(p.positions[t].top16_indices.slice(0, n));
      tf.values.slice(0, n).forEach((v, j) => expect(Math.abs(v - p.positions[t].top16_values[j])).toBeLessThanOrEqual(1e-4));
    });
    out.mse.forEach((m: number, t: number) => expect(Math.abs(m - p.positions[t].mse)).toBeLessThanOrEqual(1e-4));
    expect(out.explained_variance).toBeGreaterThan(0.5);
    expect(out.explained_variance).toBeLessThan(1);
  });

  it('with --good/--bad: the splice cost and the ablation Δ of each top feature equal margins runs with the same interventions', async () => {
    const prompt = 'Lily and Tom went to the park. Lily gave the ball to';
    const sae = SAE_DIRS.relu;
    const r = JSON.parse((await runCli(['sae', '--model', MODEL, '--sae', sae, '--prompt', prompt, '--good', ' Tom', '--bad', ' Lily', '--ablate-top', '2'])).out);
    const margin = async (ivs: object[]) => {
      const m = await runCli(['margins', '--model', MODEL, '--prompt', prompt, '--good', ' Tom', '--bad', ' Lily', ...ivs.flatMap((iv) => ['--intervention', JSON.stringify(iv)])]);
      expect(m.err).toBe('');
      return (JSON.parse(m.out).final_margin as number[]).at(-1)!;
    };
    expect(Math.abs(r.margin.clean - (await margin([])))).toBeLessThanOrEqual(1e-5);
    const f = r.margin.attributions[0].feature;
    const ablated = await margin([{ hook: HOOK, type: 'sae_clamp', sae, feature: f, value: 0 }]);
    expect(Math.abs(r.margin.attributions[0].ablation_delta - (ablated - r.margin.clean))).toBeLessThanOrEqual(1e-4);
    expect(r.margin.attributions.every((a: { activation: number }) => a.activation > 0)).toBe(true);
    expect(r.margin.splice_cost).toBeCloseTo(r.margin.spliced - r.margin.clean, 6);
  });

  it('generate and sweep take SAE-feature vectors; a bad --sae path is a clear error', async () => {
    const sae = SAE_DIRS.jumprelu;
    const base = ['--model', MODEL, '--prompt', 'Once upon a time', '--max-new-tokens', '8'];
    const plain = JSON.parse((await runCli(['generate', ...base])).out);
    const clamped = await runCli(['generate', ...base, '--intervention', JSON.stringify({ hook: HOOK, type: 'sae_clamp', sae, feature: 54, value: 40, steps: { start: 0, end: 4 } })]);
    expect(clamped.err).toBe('');
    expect(JSON.parse(clamped.out).ids).not.toEqual(plain.ids);
    const sweep = await runCli(['sweep', '--model', MODEL, '--prompt', 'The little girl felt very', '--good', ' happy', '--bad', ' sad', '--layers', '1,2', '--doses', '0,8',
      '--intervention-template', JSON.stringify({ hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: { sae, feature: 54 } })]);
    expect(sweep.err).toBe('');
    const t = JSON.parse(sweep.out);
    expect(t.margin[0][0]).toBeCloseTo(t.unsteered_margin, 5);
    expect(t.margin[1][1]).not.toBeCloseTo(t.unsteered_margin, 2);
    const bad = await runCli(['sae', '--model', MODEL, '--sae', '/nonexistent/sae', '--prompt', 'x']);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('/nonexistent/sae: no such file or folder, and not a Hub path');
  });
});
