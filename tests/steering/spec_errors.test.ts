import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import type { ModelSpec } from '../../workers/engine/arch/spec';
import { parseSpec, toIntervention, type RunShape } from '../../workers/engine/steering/spec';
import { sharedPath } from '../shared';

/** Bad intervention specs fail with messages that say what is wrong and what was expected. */
let spec: ModelSpec;
beforeAll(async () => {
  spec = (await loadTransformer(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend())).model.spec;
});
const v64 = Array.from({ length: 64 }, (_, i) => Math.sin(i));
const convert = (json: object, run: RunShape = { nPrompt: 10, maxNewTokens: 16 }) => toIntervention(parseSpec(json, '--intervention 1'), spec, run, '--intervention 1');

describe('intervention spec validation', () => {
  it('a vector of the wrong d_model says expected vs got and the hook width', () => {
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64.slice(0, 48), alpha: 1 }))
      .toThrow('--intervention 1: vector has 48 values, but blocks.1.hook_resid_post is [pos, d_model] = 64 wide (expected 64, got 48)');
    expect(() => convert({ hook: 'blocks.1.attn.hook_z', type: 'add', vector: v64, alpha: 1, head: 2 }))
      .toThrow('--intervention 1: vector has 64 values, but head 2 of blocks.1.attn.hook_z takes d_head = 8 values (expected 8, got 64)');
    expect(() => convert({ hook: 'blocks.1.attn.hook_k', type: 'add', vector: v64, alpha: 1 }))
      .toThrow('blocks.1.attn.hook_k is [pos, n_kv_heads·d_head] = 32 wide (expected 32, got 64)');
  });

  it('NaN and Infinity are reported at their index', () => {
    const bad = [...v64];
    bad[17] = NaN;
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: bad, alpha: 1 })).toThrow('vector[17] is NaN: steering vectors must be finite');
    bad[17] = Infinity;
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'rotate', vector: Float32Array.from(bad), t: 1 })).toThrow('vector[17] is Infinity');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: JSON.parse(JSON.stringify(bad)), alpha: 1 })).toThrow('vector[17] is null, not a number (NaN or Infinity written as JSON null?)');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpha: NaN })).toThrow('"alpha" must be a finite number');
  });

  it('an unknown hook, a layer that does not exist and a non-steerable hook are named', () => {
    expect(() => convert({ hook: 'blocks.1.hook_resid_pots', type: 'add', vector: v64, alpha: 1 }))
      .toThrow('--intervention 1: unknown hook "blocks.1.hook_resid_pots"; hooks look like blocks.3.hook_resid_post');
    expect(() => convert({ hook: 'blocks.9.hook_resid_post', type: 'add', vector: v64, alpha: 1 }))
      .toThrow('hook "blocks.9.hook_resid_post": layer 9 does not exist (the model has layers 0..4)');
    expect(() => convert({ hook: 'blocks.1.attn.hook_pattern', type: 'add', vector: v64, alpha: 1 }))
      .toThrow('hook "blocks.1.attn.hook_pattern" has shape [head, query, key], not [pos, width]: it cannot be steered');
  });

  it('a step window that starts at or beyond max_new_tokens would never act', () => {
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpha: 1, steps: { start: 16 } }))
      .toThrow('--intervention 1: step window starts at step 16, but generation runs steps 0..15 (max_new_tokens = 16): the intervention would never act');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpha: 1, steps: { start: 15 } })).not.toThrow();
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpha: 1, steps: { start: 5, end: 5 } }))
      .toThrow('"steps" window [5, 5) is empty: end must be greater than start');
  });

  it('positions outside the run are refused', () => {
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpha: 1, positions: [3, 25] }))
      .toThrow('position 25 is outside the run: the prompt has 10 tokens and generation feeds back 15 more (positions 0..24)');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpha: 1, positions: [10] }, { nPrompt: 10 }))
      .toThrow('position 10 is outside the run: the prompt has 10 tokens (positions 0..9)');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpha: 1, positions: { start: 30, end: 40 } }))
      .toThrow('positions [30, 40) start outside the run');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpha: 1, positions: [-1] }))
      .toThrow('"positions"[0] must be a non-negative integer (got -1)');
  });

  it('a missing dose, mode or vector and keys of another type say what the type needs', () => {
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64 })).toThrow('--intervention 1: add needs "alpha", the dose in h += alpha·v');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'rotate', vector: v64 })).toThrow('rotate needs exactly one of "theta" (radians) or "t"');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'rotate', vector: v64, alpha: 1, theta: 1 })).toThrow('"alpha" does not apply: rotate takes theta or t');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'ablate' })).toThrow('ablate needs "mode": zero, mean, project (got undefined)');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'ablate', mode: 'mean' })).toThrow('ablate mode "mean" needs "vector" (the mean activation)');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', alpha: 2 })).toThrow('add needs "vector": inline numbers or a .npy/.safetensors/.json file path');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'steer', vector: v64 })).toThrow('"type" must be one of add, add_norm_preserving, rotate, ablate, patch, sae_clamp, ban_experts, force_experts, set_expert_weights, patch_route (got "steer")');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpah: 2 })).toThrow('unknown key "alpah" (keys: hook, type, vector, alpha, theta, t, mode, source, head, positions, steps, sae, feature, value, experts)');
  });

  it('a head on a residual hook, a head out of range and patch rows too short are refused', () => {
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64.slice(0, 8), alpha: 1, head: 0 })).toThrow('"head" applies to per-head hooks (attn.hook_q/k/v/z); blocks.1.hook_resid_post is [pos, d_model]');
    expect(() => convert({ hook: 'blocks.1.attn.hook_z', type: 'add', vector: v64.slice(0, 8), alpha: 1, head: 8 })).toThrow('head 8 does not exist: blocks.1.attn.hook_z has heads 0..7');
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'patch', vector: [v64, v64], positions: 'prompt' }))
      .toThrow('patch source has 2 positions, but the intervention reaches position 9; restrict "positions" to {"start": 0, "end": 2} or use a longer source');
  });

  it('a file path reaches toIntervention only if the runner did not load it', () => {
    expect(() => convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: 'happy.npy', alpha: 1 })).toThrow('vector "happy.npy" is a file path; only the command-line runner reads vector files');
  });

  it('a valid spec becomes the RowOp, selector, window and column group the forward pass applies', () => {
    const iv = convert({ hook: 'blocks.1.attn.hook_z', type: 'rotate', vector: v64.slice(0, 8), theta: 0.5, head: 3, positions: { start: 2, end: 5 }, steps: { start: 1, end: 4 } });
    expect(iv).toEqual({
      hook: 'blocks.1.attn.hook_z', op: { kind: 'rotate', v: Float32Array.from(v64.slice(0, 8)), theta: 0.5 },
      positions: { start: 2, end: 5 }, steps: { start: 1, end: 4 }, groups: { size: 8, indices: [3] },
    });
    expect(convert({ hook: 'blocks.1.hook_resid_post', type: 'ablate', mode: 'zero' }).op).toEqual({ kind: 'set', v: new Float32Array(64) });
    expect(convert({ hook: 'blocks.1.hook_resid_post', type: 'ablate', mode: 'project', vector: v64 }).op.kind).toBe('project_out');
    expect(convert({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v64, alpha: 1, steps: { start: 2 } }).steps).toEqual({ start: 2, end: Infinity });
  });
});
