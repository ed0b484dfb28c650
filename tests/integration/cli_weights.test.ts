import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';

const MODEL = sharedPath('models', 'stories260K');
const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8'));
const lily = ref.prompts[1];

describe('branchpoint --weights', () => {
  it('q8_0: prints the storage and the probe logit error on stderr; margins still come out as JSON', async () => {
    const r = await runCli(['margins', '--model', MODEL, '--prompt', lily.prompt, '--good', ' Tom', '--bad', ' Lily', '--weights', 'q8_0']);
    expect(r.code).toBe(0);
    const m = /weights: Q8_0 linear weights .*max \|Δlogit\| vs float32 on the (\d+)-token probe: ([\d.e+-]+)/.exec(r.err);
    expect(m, r.err).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(5);
    // quantised for real (float32 would agree within 1e-4), and within the Q8_0 error seen on the
    // reference prompts (≤ 0.25 in quant_weights.test.ts, whose tolerance there is 2.6)
    expect(Number(m![2])).toBeGreaterThan(1e-3);
    expect(Number(m![2])).toBeLessThan(1);
    const out = JSON.parse(r.out);
    expect(out.final_margin.length).toBe(out.ids.length);
  });

  it('an unknown storage is refused with the accepted ones', async () => {
    const r = await runCli(['sinks', '--model', MODEL, '--prompt', 'Once', '--weights', 'q3_k']);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/--weights "q3_k": expected one of f32, f16, q8_0, q4_0/);
  });
});
