import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

/** The runner's grad, attribute and patch --method atp commands on stories260K: keys, shapes and the flag checks. */
const M = sharedPath('models', 'stories260K');
const P = 'Lily and Tom went to the park. Lily gave the ball to';
const C = 'Lily and dad went to the park. Lily gave the ball to';
const fut = ['--good', ' Tom', '--bad', ' Lily'];

describe('branchpoint grad / attribute / patch --method atp', () => {
  it('grad prints grad [n_tokens][width] and margin', async () => {
    const r = await runCli(['grad', '--model', M, '--prompt', P, ...fut, '--hook', 'blocks.1.hook_attn_out']);
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out) as { grad: number[][]; margin: number; tokens: string[] };
    expect(j.grad.length).toBe(21);
    expect(j.grad[0].length).toBe(64);
    expect(j.margin).toBeCloseTo(-0.107926, 4);
  }, 60_000);
  it('attribute --method ig prints attribution [n_tokens] and completeness_gap; grad_x_input refuses --steps', async () => {
    const r = await runCli(['attribute', '--model', M, '--prompt', P, ...fut, '--method', 'ig', '--corrupt', C, '--steps', '16']);
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out) as { attribution: number[]; completeness_gap: number; baseline: string };
    expect(j.attribution.length).toBe(21);
    expect(Math.abs(j.completeness_gap)).toBeLessThan(1e-2);
    expect(j.baseline).toBe('corrupt');
    const bad = await runCli(['attribute', '--model', M, '--prompt', P, ...fut, '--method', 'grad_x_input', '--steps', '3']);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/--steps are for --method ig/);
  }, 120_000);
  it('patch --method atp --compare-exact true prints atp, recovery and rank_correlation', async () => {
    const r = await runCli(['patch', '--model', M, '--clean', P, '--corrupt', C, ...fut, '--hook', 'attn_out', '--method', 'atp', '--compare-exact', 'true']);
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out) as { atp: number[][]; recovery: number[][]; rank_correlation: number; disagreements: unknown[] };
    expect(j.atp.length).toBe(5);
    expect(j.atp[0].length).toBe(21);
    expect(j.recovery.length).toBe(5);
    expect(j.rank_correlation).toBeGreaterThan(0.5);
    const bad = await runCli(['patch', '--model', M, '--clean', P, '--corrupt', C, ...fut, '--hook', 'attn_out', '--compare-exact', 'true']);
    expect(bad.err).toMatch(/are for --method atp/);
  }, 120_000);
  it('patch --method atp --atp-star true corrects the resid_pre grid; refused on another hook', async () => {
    const r = await runCli(['patch', '--model', M, '--clean', P, '--corrupt', C, ...fut, '--hook', 'resid_pre', '--method', 'atp', '--atp-star', 'true']);
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out) as { correction: string; atp: number[][] };
    expect(j.correction).toBe('qk');
    expect(j.atp.length).toBe(5);
    const bad = await runCli(['patch', '--model', M, '--clean', P, '--corrupt', C, ...fut, '--hook', 'mlp_out', '--method', 'atp', '--atp-star', 'true']);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/--atp-star corrects the resid_pre grid/);
  }, 120_000);
  it('attribute --set FILE prints per-method span means with intervals over the prompts; bad sets and flag mixes are refused', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanset-'));
    const file = path.join(dir, 'set.jsonl');
    const spans = [{ label: 'evidence', text: ' Tom' }, { label: 'distractor', text: ' Ben' }];
    fs.writeFileSync(file, ['Ben played with a dog.', 'Ben saw a big tree.'].map((d) => JSON.stringify({ prompt: `Lily and Tom went to the park. ${d} Lily gave the ball to`, spans })).join('\n'));
    const r = await runCli(['attribute', '--model', M, '--set', file, '--good', ' Tom', '--bad', ' Ben', '--methods', 'flow,grad_x_input']);
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out) as { labels: string[]; k: number[]; summary: { method: string; values: { n: number; mean: number }[]; deletion: unknown[] }[]; prompts: { methods: { values: number[] }[] }[] };
    expect(j.labels).toEqual(['evidence', 'distractor']);
    expect(j.k).toEqual([0, 1, 2]);
    expect(j.summary.map((s) => s.method)).toEqual(['flow', 'grad_x_input']);
    for (const [mi, s] of j.summary.entries()) {
      expect(s.deletion.length).toBe(3);
      for (let i = 0; i < 2; i++) expect(s.values[i].mean).toBeCloseTo((j.prompts[0].methods[mi].values[i] + j.prompts[1].methods[mi].values[i]) / 2, 9);
    }
    const mix = await runCli(['attribute', '--model', M, '--set', file, '--prompt', P, ...fut]);
    expect(mix.code).not.toBe(0);
    expect(mix.err).toMatch(/--prompt is for one prompt/);
    fs.writeFileSync(file, JSON.stringify({ prompt: P, spans: [{ label: 'x', start: 0 }] }));
    const broken = await runCli(['attribute', '--model', M, '--set', file, ...fut]);
    expect(broken.code).not.toBe(0);
    expect(broken.err).toMatch(/line 1, span 1: "start" and "end" must be whole token positions/);
    fs.rmSync(dir, { recursive: true });
  }, 180_000);
});
