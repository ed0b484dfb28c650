import { describe, expect, it } from 'vitest';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

/** `branchpoint dla` and `branchpoint flow` print their JSON: components summing to frozen_margin, spans, curves; bad spans refused. */
const MODEL = sharedPath('models', 'stories260K');
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';

describe('runner: dla and flow', () => {
  it('dla: the components sum to frozen_margin; heads [n_layers][n_heads]', async () => {
    const r = await runCli(['dla', '--model', MODEL, '--prompt', PROMPT, '--good', ' Tom', '--bad', ' Lily']);
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out);
    const c = j.components;
    const sum = c.embed + c.pos_embed + c.final_bias + c.attn.reduce((a: number, b: number) => a + b, 0) + c.mlp.reduce((a: number, b: number) => a + b, 0);
    expect(Math.abs(sum - j.frozen_margin)).toBeLessThan(1e-9);
    expect(j.heads.length).toBe(5);
    expect(j.heads[0].length).toBe(8);
    expect(Math.abs(j.margin - j.frozen_margin)).toBeLessThan(1e-4);
  }, 120_000);

  it('flow: attribution per token, one number per span, deletion and insertion curves; a span outside the prompt is refused', async () => {
    const r = await runCli(['flow', '--model', MODEL, '--prompt', PROMPT, '--good', ' Tom', '--bad', ' Sue', '--spans', '[{"label":"Tom","start":3,"end":5}]']);
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.attribution.length).toBe(21);
    expect(j.spans[0].label).toBe('Tom');
    expect(Math.abs(j.spans[0].value - (j.attribution[3] + j.attribution[4]))).toBeLessThan(1e-12);
    expect(j.deletion.length).toBe(j.k.length);
    expect(j.insertion.length).toBe(j.k.length);
    const bad = await runCli(['flow', '--model', MODEL, '--prompt', PROMPT, '--good', ' Tom', '--bad', ' Sue', '--spans', '[{"label":"far","start":3,"end":99}]']);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain('span "far"');
  }, 120_000);
});
