import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { readSae } from '../../workers/engine/sae/files';
import { type SaeWeights } from '../../workers/engine/sae/sae';
import { Sae } from '../../workers/engine/sae/sae';
import { resolveInterventions, type ResolveOptions } from '../../workers/engine/studies/resolve_interventions';
import type { InterventionSpec } from '../../workers/engine/steering/spec';
import type { ImportedVector } from '../../workers/engine/steering/vector_io';
import { F32_TOL, maxDiff, realModel } from '../reference_math';
import { SAE_DIRS } from '../sae/sae_files';

/**
 * resolveInterventions called directly (no CLI child process): what each spec turns into, checked
 * on the output values. A vector file's values reach the op unchanged; an SAE feature vector is
 * W_dec[f] / ‖W_dec[f]‖ computed here from the SAE's weights; a patch source's rows are the
 * source prompt's activations at the hook, checked against stories260K's reference residual
 * streams (../shared/models/stories260K/reference, numpy float64); every error carries the spec's label.
 */
const m = realModel('stories260K');
const [A, , C] = m.ref.prompts; // once_upon_a_time (5 tokens), cat_was_very (6 tokens)
const HOOK = 'blocks.2.hook_resid_post';
const v64 = Array.from({ length: 64 }, (_, i) => Math.cos(i / 3));

let e: Engine;
let relu: SaeWeights;
let sae: Sae;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(m.dir), new CpuBackend());
  relu = await readSae(new NodeFiles(SAE_DIRS.relu));
  sae = new Sae(e.backend, relu, e.spec);
});
afterAll(() => e.dispose());

/** A loadVector that serves fixed files and records what it was asked for. */
function files(byName: Record<string, ImportedVector>): { loadVector: ResolveOptions['loadVector']; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    loadVector: (p: string) => {
      asked.push(p);
      if (!byName[p]) throw new Error(`${p}: no such file`);
      return byName[p];
    },
  };
}

describe('resolveInterventions: inline specs', () => {
  it('turns each spec, in order, into its RowOp with the given values (an add, an ablate "zero", a rotate)', async () => {
    const specs: InterventionSpec[] = [
      { hook: HOOK, type: 'add', vector: v64, alpha: 3, positions: [1, 2] },
      { hook: 'blocks.0.hook_resid_pre', type: 'ablate', mode: 'zero' },
      { hook: 'blocks.1.attn.hook_z', type: 'rotate', vector: [1, 0, 0, 0, 0, 0, 0, 2], t: 0.5, head: 3, steps: { start: 1 } },
    ];
    const out = await resolveInterventions(e, specs, { nPrompt: 5, maxNewTokens: 4 });
    expect(out).toEqual([
      { hook: HOOK, op: { kind: 'add', v: Float32Array.from(v64), alpha: 3 }, positions: [1, 2] },
      { hook: 'blocks.0.hook_resid_pre', op: { kind: 'set', v: new Float32Array(64) }, positions: 'all' },
      { hook: 'blocks.1.attn.hook_z', op: { kind: 'rotate', v: Float32Array.from([1, 0, 0, 0, 0, 0, 0, 2]), t: 0.5 }, positions: 'all', steps: { start: 1, end: Infinity }, groups: { size: 8, indices: [3] } },
    ]);
  });

  it('no specs: no interventions; a bad spec is reported with its default label "intervention i+1" or the given label', async () => {
    expect(await resolveInterventions(e, [], { nPrompt: 5 })).toEqual([]);
    const specs: InterventionSpec[] = [
      { hook: HOOK, type: 'add', vector: v64, alpha: 1 },
      { hook: HOOK, type: 'add', vector: v64.slice(0, 10), alpha: 1 },
    ];
    await expect(resolveInterventions(e, specs, { nPrompt: 5 }))
      .rejects.toThrow(/^intervention 2: vector has 10 values, but blocks.2.hook_resid_post is \[pos, d_model\] = 64 wide/);
    await expect(resolveInterventions(e, specs, { nPrompt: 5 }, { label: (i) => `--intervention ${i + 10}` }))
      .rejects.toThrow(/^--intervention 11: vector has 10 values/);
  });
});

describe('resolveInterventions: vector files', () => {
  it('reads a file once per spec and puts its values in the op; a file of another hook or model is a warning', async () => {
    const vec = Float32Array.from(v64, (x) => x * 2);
    const f = files({
      'same.npy': { vector: vec },
      'other.json': { vector: vec, hook: 'blocks.4.hook_resid_post', model: 'some other model' },
      'match.json': { vector: vec, hook: HOOK, model: e.label },
    });
    const warnings: string[] = [];
    const out = await resolveInterventions(e, [
      { hook: HOOK, type: 'add', vector: 'same.npy', alpha: 2 },
      { hook: HOOK, type: 'ablate', mode: 'project', vector: 'other.json' },
      { hook: HOOK, type: 'add_norm_preserving', vector: 'match.json', alpha: 0.5 },
    ], { nPrompt: 5 }, { loadVector: f.loadVector, warn: (w) => warnings.push(w), label: (i) => `iv${i}` });
    expect(f.asked).toEqual(['same.npy', 'other.json', 'match.json']);
    expect(out.map((iv) => iv.op)).toEqual([
      { kind: 'add', v: vec, alpha: 2 },
      { kind: 'project_out', v: vec },
      { kind: 'add_norm_preserving', v: vec, alpha: 0.5 },
    ]);
    expect(warnings).toEqual([
      `iv1: other.json was computed at blocks.4.hook_resid_post; applying it at ${HOOK}`,
      `iv1: other.json was computed on some other model; this model is ${e.label}`,
    ]);
  });

  it('a file of another hook or model without a warn callback resolves all the same', async () => {
    const vec = Float32Array.from(v64);
    const out = await resolveInterventions(e, [{ hook: HOOK, type: 'add', vector: 'o.json', alpha: 1 }], { nPrompt: 5 },
      files({ 'o.json': { vector: vec, hook: 'blocks.0.hook_resid_post', model: 'another model' } }));
    expect(out[0].op).toEqual({ kind: 'add', v: vec, alpha: 1 });
  });

  it('a file path without a reader, a file that cannot be read, and a file of the wrong width fail with the spec label', async () => {
    const spec: InterventionSpec = { hook: HOOK, type: 'add', vector: 'happy.npy', alpha: 1 };
    await expect(resolveInterventions(e, [spec], { nPrompt: 5 }))
      .rejects.toThrow('intervention 1: vector "happy.npy" is a file path; only the command-line runner reads vector files (pass the values inline)');
    await expect(resolveInterventions(e, [spec], { nPrompt: 5 }, files({}))).rejects.toThrow('intervention 1: happy.npy: no such file');
    await expect(resolveInterventions(e, [spec], { nPrompt: 5 }, files({ 'happy.npy': { vector: new Float32Array(32) } })))
      .rejects.toThrow('intervention 1: happy.npy holds a vector of 32 values, but blocks.2.hook_resid_post is [pos, d_model] = 64 wide in this model (expected 64, got 32)');
    // one head of a per-head hook: the file holds d_head values
    const head = { hook: 'blocks.1.attn.hook_v', type: 'add', vector: 'h.npy', alpha: 1, head: 1 } as InterventionSpec;
    await expect(resolveInterventions(e, [head], { nPrompt: 5 }, files({ 'h.npy': { vector: new Float32Array(32) } })))
      .rejects.toThrow('intervention 1: h.npy holds a vector of 32 values, but one head of blocks.1.attn.hook_v is d_head = 8 wide');
    const ok = await resolveInterventions(e, [head], { nPrompt: 5 }, files({ 'h.npy': { vector: Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]) } }));
    expect(ok[0].op).toEqual({ kind: 'add', v: Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]), alpha: 1 });
  });

  it('a patch takes rows, so a flat vector file is not width-checked as one vector but refused as rows', async () => {
    const spec: InterventionSpec = { hook: HOOK, type: 'patch', vector: 'rows.npy' };
    await expect(resolveInterventions(e, [spec], { nPrompt: 5 }, files({ 'rows.npy': { vector: new Float32Array(320) } })))
      .rejects.toThrow('intervention 1: patch vector[0] must be a row of 64 numbers');
  });
});

describe('resolveInterventions: SAE features', () => {
  /** W_dec[f] / ‖W_dec[f]‖ in float64 from the SAE file's weights. */
  const unitRow = (f: number) => {
    const row = relu.W_dec.subarray(f * 64, (f + 1) * 64);
    const n = Math.sqrt(row.reduce((s, x) => s + x * x, 0));
    return Array.from(row, (x) => x / n);
  };

  it('a vector {"sae", "feature"} is the unit decoder row; each SAE a spec names is loaded once', async () => {
    const asked: string[] = [];
    const loadSae = (ref: string) => { asked.push(ref); return sae; };
    const out = await resolveInterventions(e, [
      { hook: HOOK, type: 'add', vector: { sae: 'relu', feature: 7 }, alpha: 4 },
      // a spec naming the same SAE twice (as "sae" and in "vector"): one load
      { hook: HOOK, type: 'sae_clamp', sae: 'relu', feature: 9, value: 2, vector: { sae: 'relu', feature: 9 } },
    ], { nPrompt: 5 }, { loadSae });
    expect(asked).toEqual(['relu', 'relu']);
    const op = out[0].op as { kind: string; v: Float32Array; alpha: number };
    expect(op.kind).toBe('add');
    expect(op.alpha).toBe(4);
    expect(maxDiff(op.v, unitRow(7))).toBeLessThanOrEqual(1e-6);
    expect(out[1].op).toEqual({ kind: 'sae_clamp', sae, feature: 9, value: 2 });
  });

  it('an SAE whose decoder rows are not unit norm still gives the unit row W_dec[f] / ‖W_dec[f]‖ (not W_dec[f])', async () => {
    // The shared SAE's rows are unit norm already; scale row f by 1 + f mod 3 so the division shows.
    const W_dec = relu.W_dec.map((x, i) => x * (1 + (Math.floor(i / 64) % 3)));
    const scaled = new Sae(e.backend, { ...relu, W_dec }, e.spec);
    const row = W_dec.subarray(7 * 64, 8 * 64), n = Math.sqrt(row.reduce((s, x) => s + x * x, 0));
    expect(n).toBeGreaterThan(1.5);
    const out = await resolveInterventions(e, [{ hook: HOOK, type: 'add', vector: { sae: 'relu', feature: 7 }, alpha: 1 }], { nPrompt: 5 }, { loadSae: () => scaled });
    expect(maxDiff((out[0].op as { v: Float32Array }).v, Array.from(row, (x) => x / n))).toBeLessThanOrEqual(1e-6);
  });

  it('an SAE without a loader, a loader that fails, and a feature outside the SAE fail with the spec label', async () => {
    await expect(resolveInterventions(e, [{ hook: HOOK, type: 'add', vector: { sae: 'relu', feature: 7 }, alpha: 1 }], { nPrompt: 5 }))
      .rejects.toThrow('intervention 1: SAE "relu" cannot be loaded here');
    await expect(resolveInterventions(e, [{ hook: HOOK, type: 'sae_clamp', sae: 'x.safetensors', feature: 1, value: 1 }], { nPrompt: 5 }, { loadSae: () => { throw new Error('x.safetensors: not an SAE'); } }))
      .rejects.toThrow('intervention 1: x.safetensors: not an SAE');
    await expect(resolveInterventions(e, [{ hook: HOOK, type: 'sae_clamp', sae: 'relu', feature: 256, value: 1 }], { nPrompt: 5 }, { loadSae: () => sae }))
      .rejects.toThrow('intervention 1: feature 256 does not exist');
  });
});

describe('resolveInterventions: activation patching from a source prompt', () => {
  it('the source prompt\'s activations at the hook become the patch rows: h^3 of "Once upon a time" from the reference', async () => {
    const arrays = m.arrays(A);
    const out = await resolveInterventions(e, [
      { hook: HOOK, type: 'patch', source: A.prompt },
      { hook: HOOK, type: 'patch', vector: [v64, v64, v64, v64, v64], positions: 'prompt' },
    ], { nPrompt: A.n_prompt });
    const op = out[0].op as { kind: string; replacement: Float32Array };
    expect(op.kind).toBe('patch');
    expect(op.replacement).toHaveLength(A.n_prompt * 64);
    const want = Array.from({ length: A.n_prompt }, (_, t) => Array.from(m.resid(arrays, A, 3, t))).flat();
    expect(maxDiff(op.replacement, want)).toBeLessThanOrEqual(F32_TOL);
    // inline rows are used as given (no source run)
    expect(out[1].op).toEqual({ kind: 'patch', replacement: Float32Array.from([v64, v64, v64, v64, v64].flat()) });
  });

  it('a source of another token length is refused, naming both lengths', async () => {
    await expect(resolveInterventions(e, [{ hook: HOOK, type: 'patch', source: C.prompt }], { nPrompt: A.n_prompt }, { label: () => 'patch 1' }))
      .rejects.toThrow(`patch 1: patch source "${C.prompt}" has ${C.n_prompt} tokens but the prompt has ${A.n_prompt}; activation patching needs prompts of equal token length (the same positions)`);
  });
});
