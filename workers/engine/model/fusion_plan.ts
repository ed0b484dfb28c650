/**
 * Which fused decode kernels (Backend.fused, WebGPU) one block call may dispatch. A fused kernel
 * replaces an op chain whose intermediate hooks then never materialise, so each fusion is allowed
 * only where the wiring has that chain and none of the hooks it skips is touched (captured,
 * intervened on or SAE-attached: RunContext.touches). Splitting a fusion changes the dispatches,
 * never the values (e2e/harness/numerics.spec.ts checks fused = unfused).
 */
import type { FusedOps } from '../backend/backend';
import type { ModelSpec } from '../arch/spec';

/** The parts of a ModelSpec that decide a block's fusions (fixed for the model's life). */
export interface BlockWiring {
  /** RMSNorm (foldable into a projection's prologue); LayerNorm never folds. */
  rmsNorm: boolean;
  gatedMlp: boolean;
  parallelResidual: boolean;
  sandwichNorms: boolean;
  qkNorm: boolean;
}

/** The wiring of every block of a model described by `s` (all blocks of one model share it). */
export function blockWiring(s: ModelSpec): BlockWiring {
  return { rmsNorm: s.norm === 'rms', gatedMlp: s.gatedMlp, parallelResidual: s.parallelResidual, sandwichNorms: s.sandwichNorms, qkNorm: s.qkNorm };
}

/**
 * One block call's fusions. Every flag is false when `ops` is null. The hooks named are those of
 * the block (`blocks.{l}.` + name) that a flag requires untouched.
 */
export interface FusionPlan {
  /** The backend's fused kernels when it has them and the call's rows fit (n ≤ maxRows), else null. */
  ops: FusedOps | null;
  /** ln1 folded into the q/k/v projections' prologue (skips ln1.hook_normalized; RMSNorm, foldsNorm). */
  foldLn1: boolean;
  /**
   * q/k/v + RoPE + KV-cache write in one dispatch (skips attn.hook_q/k/v; not with QK-norm, whose
   * per-head norm needs a whole head's outputs). The kernel may still decline a case (FusedOps.qkv
   * returns null): the block then takes the split ops.
   */
  qkv: boolean;
  /** resid_mid = x + W_O·z in one (skips hook_attn_out; not with parallel residual or sandwich norms). */
  attnOutResidual: boolean;
  /** ln2 folded into the MLP's input projections (skips ln2.hook_normalized). */
  foldLn2: boolean;
  /** act(gate)·up in one dispatch (skips mlp.hook_pre; gated MLPs only). */
  gateUp: boolean;
  /** resid_post = resid_mid + W_down·post in one (skips hook_mlp_out; as attnOutResidual). */
  mlpOutResidual: boolean;
}

/**
 * Plans one block call. Depends on the call (its row count n and the hooks its RunContext
 * touches), so it is made once per block per forward call, before the block runs.
 * @param touches whether the block's hook `name` (without the `blocks.{l}.` prefix) is touched.
 */
export function planFusion(w: BlockWiring, fused: FusedOps | undefined, n: number, touches: (name: string) => boolean): FusionPlan {
  const ops = fused && n <= fused.maxRows ? fused : null;
  if (!ops) return { ops: null, foldLn1: false, qkv: false, attnOutResidual: false, foldLn2: false, gateUp: false, mlpOutResidual: false };
  const folds = ops.foldsNorm && w.rmsNorm;
  const sequential = !w.parallelResidual && !w.sandwichNorms;
  return {
    ops,
    foldLn1: folds && !touches('ln1.hook_normalized'),
    qkv: !w.qkNorm && !['q', 'k', 'v'].some((t) => touches(`attn.hook_${t}`)),
    attnOutResidual: sequential && !touches('hook_attn_out'),
    foldLn2: folds && !touches('ln2.hook_normalized'),
    gateUp: w.gatedMlp && !touches('mlp.hook_pre'),
    mlpOutResidual: sequential && !touches('hook_mlp_out'),
  };
}
