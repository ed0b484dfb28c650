import type { Tensor } from '../backend/backend';
import type { BlockWeights, ExpertWeights, ModelWeights, NormWeights, LinearWeights } from '../arch/spec';

/**
 * The weights of a model as named modules, each the tensors it is made of (a linear's weight and
 * bias, a norm's scale and bias): what a weight diff compares (studies/compare.ts). Block modules
 * are present exactly where the architecture has them (gate ⇔ gated MLP, q_norm/k_norm ⇔ QK norm,
 * post_attn_norm/post_mlp_norm ⇔ sandwich norms; router, experts (every expert's tensors, expert by
 * expert) and shared_expert in sparse layers, in place of gate/up/down). Tensor shapes: as in arch/spec.ts ModelWeights.
 */
export interface WeightModules {
  /** Per layer, module name → its tensors (names in BLOCK_MODULES order). */
  blocks: Map<string, Tensor[]>[];
  /** embed: W_E; pos_embed: W_pos (learned positions only); unembed: W_U (+ bias); final_norm: LN_f. */
  globals: Map<string, Tensor[]>;
}

/** Block module names in display order (attention side, then MLP side). */
export const BLOCK_MODULES = ['attn_norm', 'q', 'k', 'v', 'o', 'q_norm', 'k_norm', 'post_attn_norm', 'mlp_norm', 'gate', 'up', 'down', 'router', 'experts', 'shared_expert', 'post_mlp_norm'] as const;
export type BlockModule = (typeof BLOCK_MODULES)[number];

const parts = (x: LinearWeights | NormWeights): Tensor[] => (x.b ? [x.w, x.b] : [x.w]);

const expertParts = (e: ExpertWeights): Tensor[] => [...parts(e.gate), ...parts(e.up), ...parts(e.down)];

function blockModules(bw: BlockWeights): Map<string, Tensor[]> {
  const m: Partial<Record<BlockModule, Tensor[] | undefined>> = {
    attn_norm: parts(bw.ln1), q: parts(bw.q), k: parts(bw.k), v: parts(bw.v), o: parts(bw.o),
    q_norm: bw.qNorm && [bw.qNorm], k_norm: bw.kNorm && [bw.kNorm],
    post_attn_norm: bw.postAttnNorm && parts(bw.postAttnNorm),
    mlp_norm: parts(bw.ln2), gate: bw.gate && parts(bw.gate), up: bw.up && parts(bw.up), down: bw.down && parts(bw.down),
    router: bw.moe && [bw.moe.router],
    experts: bw.moe && bw.moe.experts.flatMap(expertParts),
    shared_expert: bw.moe?.shared && [...expertParts(bw.moe.shared), bw.moe.shared.gateW],
    post_mlp_norm: bw.postMlpNorm && parts(bw.postMlpNorm),
  };
  return new Map(BLOCK_MODULES.filter((k) => m[k]).map((k) => [k, m[k]!]));
}

/** The named modules of a model's weights (see WeightModules). */
export function weightModules(w: ModelWeights): WeightModules {
  const globals = new Map<string, Tensor[]>([['embed', [w.embed]]]);
  if (w.posEmbed) globals.set('pos_embed', [w.posEmbed]);
  globals.set('unembed', w.unembedBias ? [w.unembed, w.unembedBias] : [w.unembed]);
  globals.set('final_norm', parts(w.lnFinal));
  return { blocks: w.blocks.map(blockModules), globals };
}
