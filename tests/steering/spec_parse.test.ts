import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import type { ModelSpec } from '../../workers/engine/arch/spec';
import type { Sae } from '../../workers/engine/sae/sae';
import { assertFinite, isSaeFeatureRef, parseSpec, toIntervention, type RunShape } from '../../workers/engine/steering/spec';
import { sharedPath } from '../shared';

/**
 * Intervention specs (spec.ts, DESIGN.md §2 "Interventions") beyond spec_errors.test.ts: the exact
 * spec parseSpec returns for each type (only the keys given, nothing set to undefined), every
 * structural rule with its message, and the run-dependent checks of toIntervention at their bounds
 * (positions, step windows, patch rows, zero directions), on stories260K's shapes
 * (d_model 64, 8 heads of d_head 8, 4 KV heads).
 */
let spec: ModelSpec;
beforeAll(async () => {
  spec = (await loadTransformer(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend())).model.spec;
});
const H = 'blocks.1.hook_resid_post';
const v64 = Array.from({ length: 64 }, (_, i) => Math.sin(i + 1));
const parse = (json: unknown, label?: string) => parseSpec(json, label);
const fails = (json: unknown, msg: string | RegExp, label = 'iv') => expect(() => parseSpec(json, label)).toThrow(msg);
const convert = (json: object, run: RunShape = { nPrompt: 10, maxNewTokens: 16 }, saeOf?: (ref: string) => Sae) => toIntervention(parseSpec(json), spec, run, 'iv', saeOf);

describe('parseSpec returns exactly the keys given', () => {
  it.each([
    [{ hook: H, type: 'add', vector: v64, alpha: 2 }],
    [{ hook: H, type: 'add_norm_preserving', vector: v64, alpha: -1, positions: 'prompt', steps: { start: 0 } }],
    [{ hook: H, type: 'rotate', vector: v64, theta: 0.25 }],
    [{ hook: H, type: 'rotate', vector: v64, t: 1, positions: [0, 3] }],
    [{ hook: H, type: 'ablate', mode: 'zero' }],
    [{ hook: H, type: 'ablate', mode: 'mean', vector: 'mean.npy', positions: 'generated' }],
    [{ hook: 'blocks.0.attn.hook_z', type: 'ablate', mode: 'project', vector: v64.slice(0, 8), head: 0 }],
    [{ hook: H, type: 'patch', source: 'The cat', positions: { start: 1, end: 3 } }],
    [{ hook: H, type: 'patch', vector: [v64], steps: { start: 2, end: 5 } }],
    [{ hook: H, type: 'sae_clamp', sae: 'relu', feature: 0, value: 0 }],
    [{ hook: H, type: 'add', vector: { sae: 'relu', feature: 3 }, alpha: 1, positions: 'all' }],
    [{ hook: H, type: 'rotate', vector: { sae: 'relu', feature: 0 }, t: 0.5 }],
  ])('%j', (json) => {
    const got = parse(JSON.parse(JSON.stringify(json)));
    expect(got).toStrictEqual(json);
    expect(Object.keys(got).sort()).toEqual(Object.keys(json).sort());
  });

  it('a Float32Array vector (the UI) is kept as it is', () => {
    const v = Float32Array.from(v64);
    expect(parse({ hook: H, type: 'add', vector: v, alpha: 1 }).vector).toBe(v);
  });
});

describe('parseSpec: structural rules and their messages', () => {
  it('not an object, no hook, an empty hook', () => {
    for (const j of [null, [1], 'add', 3]) fails(j, 'iv: must be a JSON object like {"hook":"blocks.1.hook_resid_post","type":"add","vector":[...],"alpha":4}');
    fails({ type: 'add', vector: v64, alpha: 1 }, 'iv: "hook" is required: a hook name such as "blocks.1.hook_resid_post"');
    fails({ hook: '', type: 'add', vector: v64, alpha: 1 }, '"hook" is required');
    fails({ hook: 3, type: 'add', vector: v64, alpha: 1 }, '"hook" is required');
    expect(() => parse({ hook: H })).toThrow(/^intervention: "type" must be one of/);
  });

  it('alpha, theta, t and value must be finite numbers', () => {
    fails({ hook: H, type: 'rotate', vector: v64, theta: '1' }, 'iv: "theta" must be a finite number (got "1")');
    fails({ hook: H, type: 'rotate', vector: v64, t: Infinity }, '"t" must be a finite number (got Infinity)');
    fails({ hook: H, type: 'sae_clamp', sae: 'x', feature: 1, value: null }, '"value" must be a finite number (got null)');
    fails({ hook: H, type: 'add', vector: v64, alpha: '2' }, '"alpha" must be a finite number (got "2")');
  });

  it('each type refuses the keys of the others', () => {
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, theta: 1 }, 'iv: "theta" does not apply: add takes alpha');
    fails({ hook: H, type: 'add_norm_preserving', vector: v64, alpha: 1, mode: 'zero' }, '"mode" does not apply: add_norm_preserving takes alpha');
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, source: 'x' }, '"source" does not apply: add takes alpha');
    fails({ hook: H, type: 'rotate', vector: v64, t: 1, mode: 'zero' }, '"mode" does not apply: rotate takes theta or t');
    fails({ hook: H, type: 'ablate', mode: 'project', vector: v64, alpha: 1 }, '"alpha" does not apply: ablate takes mode (and vector)');
    fails({ hook: H, type: 'ablate', mode: 'mean', vector: v64, source: 'x' }, '"source" does not apply: ablate takes mode (and vector)');
    fails({ hook: H, type: 'patch', source: 'x', alpha: 1 }, '"alpha" does not apply: patch replaces h with the source values');
    fails({ hook: H, type: 'patch', source: 'x', mode: 'zero' }, '"mode" does not apply: patch replaces h with the source values');
    fails({ hook: H, type: 'sae_clamp', sae: 'x', feature: 1, value: 1, head: 0 }, '"head" does not apply: sae_clamp takes sae, feature and value');
    fails({ hook: H, type: 'sae_clamp', sae: 'x', feature: 1, value: 1, vector: v64 }, '"vector" does not apply: sae_clamp takes sae, feature and value');
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, feature: 2 }, '"feature" does not apply: only sae_clamp takes sae, feature and value (an SAE feature as a vector is "vector": {"sae": PATH, "feature": F})');
    fails({ hook: H, type: 'rotate', vector: v64, t: 1, sae: 'x' }, '"sae" does not apply: only sae_clamp');
  });

  it('rotate with both theta and t; ablate "zero" with a vector, "project" without one', () => {
    fails({ hook: H, type: 'rotate', vector: v64, theta: 1, t: 1 }, 'iv: rotate needs exactly one of "theta" (radians) or "t" (fraction of the angle between h and v; 1 reaches v)');
    fails({ hook: H, type: 'ablate', mode: 'zero', vector: v64 }, 'iv: ablate mode "zero" takes no vector (it sets h to 0)');
    fails({ hook: H, type: 'ablate', mode: 'project' }, 'iv: ablate mode "project" needs "vector" (the direction to project out)');
    fails({ hook: H, type: 'ablate', mode: 'average', vector: v64 }, 'ablate needs "mode": zero, mean, project (got "average")');
  });

  it('sae_clamp needs sae, a non-negative integer feature and value', () => {
    fails({ hook: H, type: 'sae_clamp', feature: 1, value: 1 }, 'iv: sae_clamp needs "sae": the SAE (a folder or file path, or a loaded SAE\'s id)');
    fails({ hook: H, type: 'sae_clamp', sae: '', feature: 1, value: 1 }, 'sae_clamp needs "sae"');
    fails({ hook: H, type: 'sae_clamp', sae: 'x', feature: -1, value: 1 }, 'iv: sae_clamp needs "feature": a non-negative integer (got -1)');
    fails({ hook: H, type: 'sae_clamp', sae: 'x', feature: 1.5, value: 1 }, 'sae_clamp needs "feature": a non-negative integer (got 1.5)');
    fails({ hook: H, type: 'sae_clamp', sae: 'x', value: 1 }, 'sae_clamp needs "feature": a non-negative integer (got undefined)');
    fails({ hook: H, type: 'sae_clamp', sae: 'x', feature: 1 }, 'iv: sae_clamp needs "value": the activation c the feature is clamped to');
  });

  it('patch needs exactly one of source (a string) and vector, and rows rather than an SAE feature', () => {
    const msg = 'iv: patch needs exactly one of "source" (a prompt whose activations are patched in) or "vector" (rows [positions][width])';
    fails({ hook: H, type: 'patch' }, msg);
    fails({ hook: H, type: 'patch', source: 'x', vector: [v64] }, msg);
    fails({ hook: H, type: 'patch', source: 7 }, 'iv: "source" must be a prompt string');
    fails({ hook: H, type: 'patch', vector: { sae: 'x', feature: 1 } }, 'iv: patch takes rows, not an SAE feature');
  });

  it('a vector needs a type that takes one; the file-path hint only for the runner\'s labels', () => {
    fails({ hook: H, type: 'rotate', t: 1 }, /^iv: rotate needs "vector": inline numbers$/);
    fails({ hook: H, type: 'add', alpha: 1 }, '--intervention 3: add needs "vector": inline numbers or a .npy/.safetensors/.json file path', '--intervention 3');
  });

  it('a vector of the wrong kind: an object that is not {sae, feature}, a negative feature, a number', () => {
    fails({ hook: H, type: 'add', alpha: 1, vector: { sae: 'x' } }, 'iv: "vector" as an object must be {"sae": PATH, "feature": F} with F a non-negative integer (got {"sae":"x"})');
    fails({ hook: H, type: 'add', alpha: 1, vector: { sae: 3, feature: 1 } }, '"vector" as an object must be');
    fails({ hook: H, type: 'add', alpha: 1, vector: { sae: 'x', feature: -2 } }, 'iv: "vector".feature must be non-negative (got -2)');
    fails({ hook: H, type: 'add', alpha: 1, vector: 5 }, 'iv: "vector" must be an array of numbers, a file path, or {"sae": PATH, "feature": F}');
    fails({ hook: H, type: 'add', alpha: 1, vector: true }, '"vector" must be an array of numbers');
  });

  it('head must be a non-negative integer', () => {
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, head: -1 }, 'iv: "head" must be a non-negative integer (got -1)');
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, head: '2' }, '"head" must be a non-negative integer (got "2")');
    expect(parse({ hook: 'blocks.0.attn.hook_z', type: 'add', vector: v64.slice(0, 8), alpha: 1, head: 0 }).head).toBe(0);
  });

  it('positions: the three names, a list of indices, a non-empty range', () => {
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, positions: [0, 1.5] }, 'iv: "positions"[1] must be a non-negative integer (got 1.5)');
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, positions: { start: 3, end: 3 } }, 'iv: "positions" range [3, 3) is empty: end must be greater than start');
    const shape = 'must be "all", "prompt", "generated", a list of indices or {"start": i, "end": j}';
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, positions: 'last' }, `iv: "positions" ${shape} (got "last")`);
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, positions: { start: -1, end: 3 } }, `"positions" ${shape} (got {"start":-1,"end":3})`);
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, positions: { start: 0 } }, `"positions" ${shape}`);
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, positions: { start: 1.5, end: 3 } }, `"positions" ${shape} (got {"start":1.5,"end":3})`);
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, positions: { end: 2 } }, `"positions" ${shape}`);
    expect(parse({ hook: H, type: 'add', vector: v64, alpha: 1, positions: { start: 0, end: 1, extra: 1 } }).positions).toStrictEqual({ start: 0, end: 1 });
    expect(parse({ hook: H, type: 'add', vector: v64, alpha: 1, positions: [] }).positions).toEqual([]);
  });

  it('steps: {start, end?} with integers 0 ≤ start < end', () => {
    const msg = 'iv: "steps" must be {"start": k, "end": m} with integers 0 ≤ k < m (end optional)';
    for (const steps of [3, [0, 1], { end: 3 }, { start: -1 }, { start: 0.5 }, { start: 0, end: 2.5 }, { start: 0, end: '2' }]) {
      fails({ hook: H, type: 'add', vector: v64, alpha: 1, steps }, `${msg} (got ${JSON.stringify(steps)})`);
    }
    fails({ hook: H, type: 'add', vector: v64, alpha: 1, steps: { start: 4, end: 2 } }, '"steps" window [4, 2) is empty');
    expect(parse({ hook: H, type: 'add', vector: v64, alpha: 1, steps: { start: 1, end: 2, extra: 0 } }).steps).toStrictEqual({ start: 1, end: 2 });
  });

  it('isSaeFeatureRef: a {sae: string, feature: integer} object only', () => {
    expect(isSaeFeatureRef({ sae: 'a', feature: 0 })).toBe(true);
    expect(isSaeFeatureRef({ sae: 'a', feature: 0.5 })).toBe(false);
    expect(isSaeFeatureRef({ sae: 1, feature: 0 })).toBe(false);
    expect(isSaeFeatureRef([{ sae: 'a', feature: 0 }])).toBe(false);
    expect(isSaeFeatureRef(null)).toBe(false);
    expect(isSaeFeatureRef('a')).toBe(false);
  });

  it('assertFinite names the first bad entry; a non-number without the JSON-null hint unless it is null', () => {
    expect(() => assertFinite([1, 'a', NaN], 'v')).toThrow(/^v\[1\] is "a", not a number$/);
    expect(() => assertFinite([1, 2, null], 'v')).toThrow(/^v\[2\] is null, not a number \(NaN or Infinity written as JSON null\?\)$/);
    expect(() => assertFinite([0, -Infinity], 'w')).toThrow(/^w\[1\] is -Infinity: steering vectors must be finite$/);
    expect(() => assertFinite(Float32Array.from([1, 2]), 'w')).not.toThrow();
    expect(() => assertFinite([], 'w')).not.toThrow();
  });
});

describe('toIntervention at the bounds of the run', () => {
  it('positions: the last position of a generation is nPrompt + max_new_tokens − 2 (the last token is never fed back)', () => {
    expect(() => convert({ hook: H, type: 'add', vector: v64, alpha: 1, positions: [24] })).not.toThrow();
    expect(() => convert({ hook: H, type: 'add', vector: v64, alpha: 1, positions: { start: 24, end: 30 } })).not.toThrow();
    expect(() => convert({ hook: H, type: 'add', vector: v64, alpha: 1, positions: { start: 25, end: 30 } }))
      .toThrow('iv: positions [25, 30) start outside the run: the prompt has 10 tokens and generation feeds back 15 more (positions 0..24)');
    // one new token: nothing is fed back
    expect(() => convert({ hook: H, type: 'add', vector: v64, alpha: 1, positions: [10] }, { nPrompt: 10, maxNewTokens: 1 }))
      .toThrow('position 10 is outside the run: the prompt has 10 tokens and generation feeds back 0 more (positions 0..9)');
    expect(() => convert({ hook: H, type: 'add', vector: v64, alpha: 1, positions: [9] }, { nPrompt: 10, maxNewTokens: 0 })).not.toThrow();
    expect(() => convert({ hook: H, type: 'add', vector: v64, alpha: 1, positions: [10] }, { nPrompt: 10, maxNewTokens: 0 }))
      .toThrow('generation feeds back 0 more (positions 0..9)');
    expect(() => convert({ hook: H, type: 'add', vector: v64, alpha: 1, positions: { start: 9, end: 12 } }, { nPrompt: 10 })).not.toThrow();
  });

  it('a step window is checked only when the run generates', () => {
    expect(convert({ hook: H, type: 'add', vector: v64, alpha: 1, steps: { start: 40 } }, { nPrompt: 10 }).steps).toEqual({ start: 40, end: Infinity });
    expect(convert({ hook: H, type: 'add', vector: v64, alpha: 1, steps: { start: 0, end: 3 } }).steps).toEqual({ start: 0, end: 3 });
    expect('steps' in convert({ hook: H, type: 'add', vector: v64, alpha: 1 })).toBe(false);
    expect('groups' in convert({ hook: H, type: 'add', vector: v64, alpha: 1 })).toBe(false);
  });

  it('patch rows: each a row of the hook\'s width of finite numbers, covering the last position reached', () => {
    const row = (x: number) => Array.from({ length: 64 }, (_, i) => x + i / 100);
    expect(() => convert({ hook: H, type: 'patch', vector: [row(0), 5] })).toThrow('iv: patch vector[1] must be a row of 64 numbers');
    expect(() => convert({ hook: H, type: 'patch', vector: [row(0), row(1).slice(1)] }))
      .toThrow('iv: patch vector[1] has 63 values, but blocks.1.hook_resid_post is [pos, d_model] = 64 wide');
    const nan = row(0);
    nan[5] = NaN;
    expect(() => convert({ hook: H, type: 'patch', vector: [row(0), nan], positions: [0, 1] })).toThrow('patch vector[1][5] is NaN');
    // the last position each selector reaches: a list → its maximum; a range → min(end, run) − 1; prompt → nPrompt − 1; all/generated → run − 1
    const rows = (n: number) => Array.from({ length: n }, (_, i) => row(i));
    expect(() => convert({ hook: H, type: 'patch', vector: rows(4), positions: [3, 1] })).not.toThrow();
    expect(() => convert({ hook: H, type: 'patch', vector: rows(3), positions: [1, 3] })).toThrow('patch source has 3 positions, but the intervention reaches position 3; restrict "positions" to {"start": 0, "end": 3}');
    expect(() => convert({ hook: H, type: 'patch', vector: rows(6), positions: { start: 2, end: 6 } })).not.toThrow();
    expect(() => convert({ hook: H, type: 'patch', vector: rows(5), positions: { start: 2, end: 6 } })).toThrow('reaches position 5');
    expect(() => convert({ hook: H, type: 'patch', vector: rows(25), positions: { start: 2, end: 100 } })).not.toThrow();
    expect(() => convert({ hook: H, type: 'patch', vector: rows(24), positions: { start: 2, end: 100 } })).toThrow('reaches position 24');
    expect(() => convert({ hook: H, type: 'patch', vector: rows(10), positions: 'prompt' })).not.toThrow();
    expect(() => convert({ hook: H, type: 'patch', vector: rows(25), positions: 'generated' })).not.toThrow();
    expect(() => convert({ hook: H, type: 'patch', vector: rows(24), positions: 'generated' })).toThrow('reaches position 24');
    expect(() => convert({ hook: H, type: 'patch', vector: rows(24) })).toThrow('reaches position 24');
    expect(() => convert({ hook: H, type: 'patch', vector: [], positions: [] })).not.toThrow();
    // the replacement is the rows laid end to end
    const op = convert({ hook: H, type: 'patch', vector: rows(2), positions: [0, 1] }).op as { kind: string; replacement: Float32Array };
    expect(op).toEqual({ kind: 'patch', replacement: Float32Array.from([...row(0), ...row(1)]) });
  });

  it('a patch source not yet run, and a patch of one head (full-width rows, the head\'s columns)', () => {
    expect(() => toIntervention({ hook: H, type: 'patch', source: 'x' }, spec, { nPrompt: 2 }, 'iv'))
      .toThrow('iv: patch source not resolved: run the source prompt first (resolve.ts) or pass rows in "vector"');
    const rows = [Array.from({ length: 64 }, (_, i) => i), Array.from({ length: 64 }, (_, i) => -i)];
    const iv = convert({ hook: 'blocks.1.attn.hook_z', type: 'patch', vector: rows, head: 5 }, { nPrompt: 2 });
    expect(iv.groups).toEqual({ size: 8, indices: [5] });
    expect((iv.op as { replacement: Float32Array }).replacement).toHaveLength(128);
  });

  it('ablate "zero" of one head sets d_head zeros; "mean" sets the vector; add_norm_preserving keeps alpha', () => {
    const iv = convert({ hook: 'blocks.2.attn.hook_z', type: 'ablate', mode: 'zero', head: 7 });
    expect(iv.op).toEqual({ kind: 'set', v: new Float32Array(8) });
    expect(iv.groups).toEqual({ size: 8, indices: [7] });
    expect(convert({ hook: H, type: 'ablate', mode: 'mean', vector: v64 }).op).toEqual({ kind: 'set', v: Float32Array.from(v64) });
    expect(convert({ hook: H, type: 'add_norm_preserving', vector: v64, alpha: -2 }).op).toEqual({ kind: 'add_norm_preserving', v: Float32Array.from(v64), alpha: -2 });
    expect(convert({ hook: H, type: 'ablate', mode: 'project', vector: v64 }).op).toEqual({ kind: 'project_out', v: Float32Array.from(v64) });
  });

  it('rotate and ablate "project" need a non-zero direction; add and mean take a zero vector', () => {
    const zero = new Array(64).fill(0);
    expect(() => convert({ hook: H, type: 'rotate', vector: zero, t: 1 }))
      .toThrow('iv: rotate needs a direction, but the vector is all zeros (64 values); build or import a non-zero vector');
    expect(() => convert({ hook: H, type: 'ablate', mode: 'project', vector: zero }))
      .toThrow('iv: ablate mode "project" needs a direction, but the vector is all zeros (64 values)');
    expect(() => convert({ hook: H, type: 'rotate', vector: [...zero.slice(1), 1e-30], t: 1 })).not.toThrow();
    expect(convert({ hook: H, type: 'add', vector: zero, alpha: 1 }).op).toEqual({ kind: 'add', v: new Float32Array(64), alpha: 1 });
    expect(convert({ hook: H, type: 'ablate', mode: 'mean', vector: zero }).op).toEqual({ kind: 'set', v: new Float32Array(64) });
  });

  it('SAE references: not loaded, a loader that fails, a clamp at another hook', () => {
    const fake = { label: 'fake SAE', cfg: { hookName: 'blocks.2.hook_resid_post', dSae: 4 }, assertFeature: (f: number) => { if (f >= 4) throw new Error(`feature ${f} does not exist: fake SAE has features 0..3`); } } as unknown as Sae;
    expect(() => convert({ hook: H, type: 'sae_clamp', sae: 'a', feature: 1, value: 1 }))
      .toThrow('iv: SAE "a" is not loaded (resolve.ts loads the SAEs a spec names)');
    expect(() => convert({ hook: H, type: 'sae_clamp', sae: 'a', feature: 1, value: 1 }, undefined, () => { throw new Error('a: no such SAE'); }))
      .toThrow('iv: a: no such SAE');
    expect(() => convert({ hook: H, type: 'sae_clamp', sae: 'a', feature: 1, value: 1 }, undefined, () => fake))
      .toThrow('iv: sae_clamp at blocks.1.hook_resid_post, but fake SAE reads blocks.2.hook_resid_post; clamp at its hook');
    expect(() => convert({ hook: 'blocks.2.hook_resid_post', type: 'sae_clamp', sae: 'a', feature: 4, value: 1 }, undefined, () => fake))
      .toThrow('iv: feature 4 does not exist: fake SAE has features 0..3');
    expect(() => convert({ hook: H, type: 'add', vector: { sae: 'a', feature: 4 }, alpha: 1 }, undefined, () => fake))
      .toThrow('iv: feature 4 does not exist: fake SAE has features 0..3');
    expect(convert({ hook: 'blocks.2.hook_resid_post', type: 'sae_clamp', sae: 'a', feature: 3, value: 1.5 }, undefined, () => fake).op)
      .toEqual({ kind: 'sae_clamp', sae: fake, feature: 3, value: 1.5 });
  });
});
