import { describe, expect, it } from 'vitest';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';

/** The runner's `compare` command on the base / fine-tune pair, and its refusal of a mismatched pair. */
const A = sharedPath('models', 'stories260K'), B = sharedPath('models', 'stories260K-happy-ft');
const PROMPT = 'Lily found a big box. She felt very';

describe('branchpoint compare', () => {
  it('prints weight_diff, lens margins, sinks and cross_patch in the documented shapes; block 3\'s MLP is the one change', async () => {
    const r = await runCli(['compare', '--model', A, '--model-b', B, '--prompt', PROMPT, '--good', ' happy', '--bad', ' sad', '--hooks', 'resid_pre,mlp_out,z', '--positions', 'true', '--threads', '1']);
    expect(r.code, r.err).toBe(0);
    const o = JSON.parse(r.out);
    const T = o.tokens.length, L = 5, H = 8;
    for (const m of ['attn_norm', 'q', 'k', 'v', 'o', 'mlp_norm', 'gate', 'up', 'down']) {
      expect(o.weight_diff[m]).toHaveLength(L);
      o.weight_diff[m].forEach((x: number, l: number) => (l === 3 && ['gate', 'up', 'down'].includes(m) ? expect(x).toBeGreaterThan(0) : expect(x).toBe(0)));
    }
    for (const g of ['embed', 'unembed', 'final_norm']) expect(o.weight_diff[g]).toBe(0);
    for (const k of ['lens_margin_a', 'lens_margin_b', 'lens_margin_diff', 'resid_rel_diff', 'resid_cosine']) {
      expect(o[k]).toHaveLength(L + 1);
      expect(o[k].every((row: number[]) => row.length === T)).toBe(true);
    }
    expect(o.lens_margin_diff.slice(0, 4).flat().every((x: number) => x === 0)).toBe(true);
    for (const k of ['sink_alpha0_a', 'sink_alpha0_b', 'sink_js', 'sink_dalpha0']) {
      expect(o[k]).toHaveLength(L);
      expect(o[k].every((row: number[]) => row.length === H)).toBe(true);
    }
    expect(o.sink_js.slice(0, 4).flat().every((x: number) => x === 0)).toBe(true);
    expect(Object.keys(o.cross_patch)).toEqual(['resid_pre', 'mlp_out', 'z']);
    expect(o.cross_patch.mlp_out).toHaveLength(L);
    expect(Math.abs(o.cross_patch.mlp_out[3] - 1)).toBeLessThan(1e-5);
    expect(o.cross_patch.resid_pre.slice(0, 4).every((x: number) => Math.abs(x) < 1e-6)).toBe(true);
    expect(o.cross_patch.z).toHaveLength(L);
    expect(o.cross_patch.z.every((row: number[]) => row.length === H)).toBe(true);
    expect(Math.abs(o.cross_patch_reverse.mlp_out[3])).toBeLessThan(1e-5);
    expect(Object.keys(o.cross_patch_positions)).toEqual(['resid_pre', 'mlp_out']);
    expect(o.cross_patch_positions.mlp_out).toHaveLength(L);
    expect(o.cross_patch_positions.mlp_out.every((row: number[]) => row.length === T)).toBe(true);
    expect(o.margin_b - o.margin_a).toBeGreaterThan(2);
    expect(o.margin_b).toBeCloseTo(o.lens_margin_b[L][T - 1], 6);
  });

  it('refuses a mismatched pair (exit 1), naming what differs', async () => {
    const r = await runCli(['compare', '--model', A, '--model-b', sharedPath('models', 'aidreams260K'), '--prompt', PROMPT, '--good', ' happy', '--bad', ' sad', '--threads', '1']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/n_layers 5 vs 4/);
    expect(r.err).toMatch(/vocabulary id/);
    const h = await runCli(['compare', '--model', A, '--model-b', B, '--prompt', PROMPT, '--good', ' happy', '--bad', ' sad', '--hooks', 'resid_pre,mlp', '--threads', '1']);
    expect(h.code).toBe(1);
    expect(h.err).toContain('--hooks "resid_pre,mlp": mlp is not a patching hook; use a comma-separated list of resid_pre, attn_out, mlp_out, z');
  });
});
