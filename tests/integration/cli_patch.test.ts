import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';

/** The runner's `patch` command and its refusals (an unknown command says so). */
const MODEL = sharedPath('models', 'stories260K');
const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8')) as { prompts: { name: string; prompt: string; last_prompt_position_logits: number[] }[] };
const lily = ref.prompts.find((p) => p.name === 'lily_tom_ball')!;
const CORRUPT = 'Tom and Lily went to the park. Lily gave the ball to';

describe('branchpoint patch', () => {
  it('prints clean_margin (the golden margin), corrupt_margin (= margins on the corrupted prompt) and recovery [n_layers][n_tokens]', async () => {
    const [p, m] = await Promise.all([
      runCli(['patch', '--model', MODEL, '--clean', lily.prompt, '--corrupt', CORRUPT, '--good', ' Tom', '--bad', ' Lily', '--hook', 'resid_pre']),
      runCli(['margins', '--model', MODEL, '--prompt', CORRUPT, '--good', ' Tom', '--bad', ' Lily']),
    ]);
    expect(p.code, p.err).toBe(0);
    const out = JSON.parse(p.out);
    const marg = JSON.parse(m.out);
    const lp = logSoftmaxCpu(Float32Array.from(lily.last_prompt_position_logits), 512);
    expect(Math.abs(out.clean_margin - (lp[marg.good.firstIds[0]] - lp[marg.bad.firstIds[0]]))).toBeLessThan(1e-4);
    expect(out.corrupt_margin).toBeCloseTo(marg.final_margin.at(-1), 5);
    expect(out.recovery).toHaveLength(5);
    expect(out.recovery.every((row: number[]) => row.length === 21)).toBe(true);
    expect(Math.abs(out.layer_recovery[0] - 1)).toBeLessThan(1e-5);
    expect(out.direction).toBe('denoise');
    // the name swap barely moves the margin: the runner warns, naming the denominator, as the view does
    expect(p.err).toContain(`warning: Δ_clean − Δ_corrupt = ${(out.clean_margin - out.corrupt_margin).toFixed(3)} nats, below the 0.5 nats`);
  });

  it('z gives [n_layers][n_heads]; prompts of different lengths and bad flags are refused with the reason', async () => {
    const z = await runCli(['patch', '--model', MODEL, '--clean', lily.prompt, '--corrupt', CORRUPT, '--good', ' Tom', '--bad', ' Lily', '--hook', 'z', '--direction', 'noise']);
    expect(z.code, z.err).toBe(0);
    const out = JSON.parse(z.out);
    expect(out.recovery.map((r: number[]) => r.length)).toEqual([8, 8, 8, 8, 8]);
    expect(out.columns).toBe('head');
    const long = await runCli(['patch', '--model', MODEL, '--clean', lily.prompt, '--corrupt', 'Lily and Tom went to the park. Tom gave the ball to', '--good', ' Tom', '--bad', ' Lily', '--hook', 'resid_pre']);
    expect(long.code).toBe(1);
    expect(long.err).toContain('the clean prompt has 21 tokens and the corrupted prompt 22');
    const hook = await runCli(['patch', '--model', MODEL, '--clean', lily.prompt, '--corrupt', CORRUPT, '--good', ' Tom', '--bad', ' Lily', '--hook', 'resid_post']);
    expect(hook.err).toContain('--hook "resid_post": expected one of resid_pre, attn_out, mlp_out, z');
  });

  it('an unknown command says so (not "--prompt is required") and exits 2 before loading a model', async () => {
    const r = await runCli(['frobnicate', '--model', '/nonexistent']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('unknown command "frobnicate" (commands:');
    expect(r.err).not.toContain('--prompt is required');
    const typo = await runCli(['margns', '--model', '/nonexistent']);
    expect(typo.code).toBe(2);
    expect(typo.err).toContain('unknown command "margns"; did you mean margins?');
  });
});
