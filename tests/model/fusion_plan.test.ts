import { describe, expect, it } from 'vitest';
import type { FusedOps } from '../../workers/engine/backend/backend';
import { planFusion, type BlockWiring, type FusionPlan } from '../../workers/engine/model/fusion_plan';

/**
 * The fusion planner's rules (model/fusion_plan.ts), each against its docstring: a fused kernel is
 * used only where the backend has it, the call's rows fit, the wiring has the op chain it replaces
 * and no hook it skips is touched. (That fused = unfused in value is e2e/harness/numerics.spec.ts's.)
 */
const ops = (maxRows: number, foldsNorm: boolean): FusedOps => ({ maxRows, foldsNorm, linear: () => { throw new Error('not run'); }, qkv: () => null });
const LLAMA: BlockWiring = { rmsNorm: true, gatedMlp: true, parallelResidual: false, sandwichNorms: false, qkNorm: false };
const FLAGS = ['foldLn1', 'qkv', 'attnOutResidual', 'foldLn2', 'gateUp', 'mlpOutResidual'] as const;
const on = (p: FusionPlan): string[] => FLAGS.filter((f) => p[f]);
const untouched = () => false;

describe('planFusion', () => {
  it('no fused kernels, or more rows than they take: nothing fuses (the ops are null)', () => {
    expect(planFusion(LLAMA, undefined, 1, untouched)).toMatchObject({ ops: null });
    expect(on(planFusion(LLAMA, undefined, 1, untouched))).toEqual([]);
    const fz = ops(4, true);
    expect(on(planFusion(LLAMA, fz, 5, untouched))).toEqual([]);
    expect(planFusion(LLAMA, fz, 4, untouched).ops).toBe(fz);
    expect(on(planFusion(LLAMA, fz, 4, untouched))).toEqual([...FLAGS]);
  });

  it('each touched hook splits exactly the fusion that skips it', () => {
    const split: Record<string, (typeof FLAGS)[number]> = {
      'ln1.hook_normalized': 'foldLn1', 'attn.hook_q': 'qkv', 'attn.hook_k': 'qkv', 'attn.hook_v': 'qkv',
      hook_attn_out: 'attnOutResidual', 'ln2.hook_normalized': 'foldLn2', 'mlp.hook_pre': 'gateUp', hook_mlp_out: 'mlpOutResidual',
    };
    for (const [hook, flag] of Object.entries(split)) {
      expect(on(planFusion(LLAMA, ops(8, true), 1, (h) => h === hook)), hook).toEqual(FLAGS.filter((f) => f !== flag));
    }
    // hooks no fused kernel skips split nothing
    for (const hook of ['hook_resid_pre', 'hook_resid_mid', 'attn.hook_z', 'attn.hook_pattern', 'mlp.hook_post', 'hook_resid_post']) {
      expect(on(planFusion(LLAMA, ops(8, true), 1, (h) => h === hook)), hook).toEqual([...FLAGS]);
    }
  });

  it('norms fold only where the backend says it pays and the norm is RMSNorm; LayerNorm, ungated, parallel, sandwich and QK-norm wirings drop their fusions', () => {
    expect(on(planFusion(LLAMA, ops(8, false), 1, untouched))).toEqual(['qkv', 'attnOutResidual', 'gateUp', 'mlpOutResidual']);
    const gpt2: BlockWiring = { rmsNorm: false, gatedMlp: false, parallelResidual: false, sandwichNorms: false, qkNorm: false };
    expect(on(planFusion(gpt2, ops(8, true), 1, untouched))).toEqual(['qkv', 'attnOutResidual', 'mlpOutResidual']);
    expect(on(planFusion({ ...gpt2, parallelResidual: true }, ops(8, true), 1, untouched))).toEqual(['qkv']);
    const gemma2: BlockWiring = { ...LLAMA, sandwichNorms: true };
    expect(on(planFusion(gemma2, ops(8, true), 1, untouched))).toEqual(['foldLn1', 'qkv', 'foldLn2', 'gateUp']);
    expect(on(planFusion({ ...LLAMA, qkNorm: true }, ops(8, true), 1, untouched))).toEqual(['foldLn1', 'attnOutResidual', 'foldLn2', 'gateUp', 'mlpOutResidual']);
  });
});
