import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SPEC_KEYS } from '../../workers/engine/steering/spec';
import { readNpy } from '../../workers/engine/steering/vector_io';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';

/** The runner's steering surface: vector → file, sweep table, --intervention on margins/generate. */
const MODEL = sharedPath('models', 'stories260K');
const SET = path.join(__dirname, '..', '..', 'public', 'steering', 'happy_sad.json');
const PROMPT = 'The little girl felt very';

const cli = (...args: string[]) => runCli(args);

describe('branchpoint steering commands', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-steer-'));
  const npy = path.join(dir, 'happy.npy');

  it('vector → sweep → margins/generate with --intervention agree with each other', async () => {
    const vec = await cli('vector', '--model', MODEL, '--method', 'caa', '--set', SET, '--hook', 'blocks.3.hook_resid_post', '--out', npy);
    expect(vec.err).toBe('');
    expect(JSON.parse(vec.out)).toMatchObject({ d_model: 64, n_positive: 16, n_negative: 16, format: 'npy' });
    expect(readNpy(new Uint8Array(fs.readFileSync(npy)))).toHaveLength(64);

    const sweep = await cli('sweep', '--model', MODEL, '--prompt', PROMPT, '--good', ' happy', '--bad', ' sad', '--vector', npy, '--layers', 'all', '--doses', '-8,-4,0,4,8');
    expect(sweep.code).toBe(0);
    const table = JSON.parse(sweep.out);
    expect(table.layers).toEqual([0, 1, 2, 3, 4]);
    expect(table.doses).toEqual([-8, -4, 0, 4, 8]);
    expect(table.margin).toHaveLength(5);
    expect(table.kl.every((row: number[]) => row.length === 5 && row[2] === 0)).toBe(true);

    const spec = JSON.stringify({ hook: 'blocks.3.hook_resid_post', type: 'add', vector: npy, alpha: 4 });
    const m = await cli('margins', '--model', MODEL, '--prompt', PROMPT, '--good', ' happy', '--bad', ' sad', '--intervention', spec);
    expect(m.code).toBe(0);
    const fm = JSON.parse(m.out).final_margin;
    expect(fm[fm.length - 1]).toBeCloseTo(table.margin[3][3], 5);

    const plain = JSON.parse((await cli('generate', '--model', MODEL, '--prompt', PROMPT, '--max-new-tokens', '8')).out);
    const late = JSON.parse((await cli('generate', '--model', MODEL, '--prompt', PROMPT, '--max-new-tokens', '8', '--intervention', JSON.stringify({ hook: 'blocks.3.hook_resid_post', type: 'add', vector: npy, alpha: 4, steps: { start: 5 } }))).out);
    expect(late.ids.slice(0, 5)).toEqual(plain.ids.slice(0, 5));
    const early = JSON.parse((await cli('generate', '--model', MODEL, '--prompt', PROMPT, '--max-new-tokens', '8', '--intervention', spec)).out);
    expect(early.ids[0]).not.toBe(plain.ids[0]);
  });

  it('rotate sweeps through --intervention-template', async () => {
    const r = await cli('sweep', '--model', MODEL, '--prompt', PROMPT, '--good', ' happy', '--bad', ' sad', '--layers', '2,3', '--doses', '0,0.2',
      '--intervention-template', JSON.stringify({ hook: 'blocks.{l}.hook_resid_post', type: 'rotate', vector: Array.from({ length: 64 }, (_, i) => Math.sin(i)) }));
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ layers: [2, 3], doses: [0, 0.2], dose_key: 'theta', hooks: ['blocks.2.hook_resid_post', 'blocks.3.hook_resid_post'] });
  });

  it('bad interventions exit 1 with the message naming the flag', async () => {
    const base = ['generate', '--model', MODEL, '--prompt', PROMPT, '--max-new-tokens', '4'];
    const late = await cli(...base, '--intervention', JSON.stringify({ hook: 'blocks.3.hook_resid_post', type: 'add', vector: npy, alpha: 4, steps: { start: 4 } }));
    expect(late.code).toBe(1);
    expect(late.err).toContain('error: --intervention 1: step window starts at step 4, but generation runs steps 0..3 (max_new_tokens = 4)');
    const json = await cli(...base, '--intervention', '{hook: blocks.1}');
    expect(json.err).toContain('error: --intervention 1: not valid JSON');
    const missing = await cli(...base, '--intervention', JSON.stringify({ hook: 'blocks.3.hook_resid_post', type: 'add', vector: path.join(dir, 'nope.npy'), alpha: 1 }));
    expect(missing.err).toContain('does not exist');
    const wide = await cli(...base, '--intervention', JSON.stringify({ hook: 'blocks.3.mlp.hook_post', type: 'add', vector: npy, alpha: 1 }));
    expect(wide.err).toContain(`error: --intervention 1: ${npy} holds a vector of 64 values, but blocks.3.mlp.hook_post is [pos, d_mlp] = 172 wide in this model (expected 172, got 64)`);
  });

  it('the usage text documents every spec key and the sweep output', async () => {
    const r = await cli('help');
    for (const k of SPEC_KEYS) expect(r.out).toMatch(new RegExp(`^\\s+${k === 'theta' || k === 't' ? 'theta \\| t' : k}\\s`, 'm'));
    expect(r.out).toContain('branchpoint sweep');
    expect(r.out).toContain('margin: [layer][dose], kl: [layer][dose]');
  });
});
