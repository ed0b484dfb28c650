import type { ModelSpec } from '../arch/spec';

/**
 * The single list of hook points (TransformerLens names). The UI, the runner and the docs read
 * this list; the forward pass in `model/transformer.ts` fires each one where it is computed.
 * Shapes have no batch dimension: `pos` = positions of this forward call.
 * While an SAE is attached at a hook, that hook also has the SAE's own hook points
 * (`<hook>.hook_sae_acts_post`, …): `model/sae_site.ts` SAE_HOOKS declares them.
 */
export interface HookInfo {
  /** Name with `{l}` for the block index (and `{e}` for the expert, per-expert hooks). */
  template: string;
  shape: string;
  meaning: string;
  /** True when the hook tensor is [pos, width] so row steering ops can act on it. */
  steerable: boolean;
  /** Returns false for architectures that do not compute this value (never faked). */
  present?: (spec: ModelSpec) => boolean;
  /** Returns false for the blocks that do not compute it (the router hooks: sparse layers only). */
  presentAt?: (spec: ModelSpec, layer: number) => boolean;
}

/** Whether block l's MLP is a mixture of experts (ModelSpec.moe.sparse). */
const sparseAt = (s: ModelSpec, l: number): boolean => s.moe?.sparse[l] === true;

export const HOOKS: readonly HookInfo[] = [
  { template: 'hook_embed', shape: '[pos, d_model]', meaning: 'token embeddings W_E[ids] (times embed scale, Gemma)', steerable: true },
  { template: 'hook_pos_embed', shape: '[pos, d_model]', meaning: 'learned position embeddings W_pos[pos]', steerable: true, present: (s) => s.positional === 'learned' },
  { template: 'blocks.{l}.hook_resid_pre', shape: '[pos, d_model]', meaning: 'residual stream entering block l', steerable: true },
  { template: 'blocks.{l}.ln1.hook_normalized', shape: '[pos, d_model]', meaning: 'input to attention after ln1 (weight applied)', steerable: true },
  { template: 'blocks.{l}.attn.hook_q', shape: '[pos, n_heads·d_head]', meaning: 'queries after q_norm and rotary (heads concatenated)', steerable: true },
  { template: 'blocks.{l}.attn.hook_k', shape: '[pos, n_kv_heads·d_head]', meaning: 'keys after k_norm and rotary, as cached', steerable: true },
  { template: 'blocks.{l}.attn.hook_v', shape: '[pos, n_kv_heads·d_head]', meaning: 'values, as cached', steerable: true },
  { template: 'blocks.{l}.attn.hook_attn_scores', shape: '[head, query, key]', meaning: 'scaled (soft-capped) pre-softmax scores; masked = −∞', steerable: false },
  { template: 'blocks.{l}.attn.hook_pattern', shape: '[head, query, key]', meaning: 'attention probabilities; masked = 0', steerable: false },
  { template: 'blocks.{l}.attn.hook_z', shape: '[pos, n_heads·d_head]', meaning: 'per-head weighted values before W_O (heads concatenated)', steerable: true },
  { template: 'blocks.{l}.hook_attn_out', shape: '[pos, d_model]', meaning: 'attention output added to the residual stream (after post-attention norm, Gemma 2)', steerable: true },
  { template: 'blocks.{l}.hook_resid_mid', shape: '[pos, d_model]', meaning: 'residual stream between attention and MLP', steerable: true, present: (s) => !s.parallelResidual },
  { template: 'blocks.{l}.ln2.hook_normalized', shape: '[pos, d_model]', meaning: 'input to the MLP after ln2', steerable: true },
  { template: 'blocks.{l}.mlp.hook_pre', shape: '[pos, d_mlp]', meaning: 'MLP pre-activation (the gate projection in gated MLPs)', steerable: true, presentAt: (s, l) => !sparseAt(s, l) },
  { template: 'blocks.{l}.mlp.hook_post', shape: '[pos, d_mlp]', meaning: 'MLP activation (act(gate)·up in gated MLPs)', steerable: true, presentAt: (s, l) => !sparseAt(s, l) },
  { template: 'blocks.{l}.mlp.hook_router_logits', shape: '[pos, n_experts]', meaning: 'mixture of experts: router (gate) logits before the softmax; an intervention here changes the choice (top-k), the weights stay the router\'s own p', steerable: true, present: (s) => s.moe !== undefined, presentAt: sparseAt },
  { template: 'blocks.{l}.mlp.hook_expert_indices', shape: '[pos, k]', meaning: 'mixture of experts: the chosen experts (top-k of the router softmax, descending) as float32 ids', steerable: true, present: (s) => s.moe !== undefined, presentAt: sparseAt },
  { template: 'blocks.{l}.mlp.hook_expert_weights', shape: '[pos, k]', meaning: 'mixture of experts: the chosen experts\' weights (softmax probabilities, renormalised where the model does)', steerable: true, present: (s) => s.moe !== undefined, presentAt: sparseAt },
  { template: 'blocks.{l}.mlp.experts.{e}.hook_out', shape: '[pos, d_model]', meaning: 'mixture of experts: expert e\'s contribution to the MLP output, weight · down_e(act(gate_e x)·up_e x), where it is computed; rows of tokens that did not choose e are 0, so the sum over experts (+ the gated shared expert, Qwen2-MoE) is hook_mlp_out (CPU backend; WebGPU refuses it)', steerable: true, present: (s) => s.moe !== undefined, presentAt: sparseAt },
  { template: 'blocks.{l}.hook_mlp_out', shape: '[pos, d_model]', meaning: 'MLP output added to the residual stream', steerable: true },
  { template: 'blocks.{l}.hook_resid_post', shape: '[pos, d_model]', meaning: 'residual stream after block l', steerable: true },
  { template: 'ln_final.hook_normalized', shape: '[pos, d_model]', meaning: 'final norm output, input to W_U', steerable: true },
  { template: 'logits', shape: '[pos, d_vocab]', meaning: 'output logits (after final soft-capping, Gemma 2)', steerable: false },
];

/** All concrete hook names for a model, in forward order. */
export function hookNames(spec: ModelSpec): string[] {
  const out: string[] = [];
  const present = HOOKS.filter((h) => !h.present || h.present(spec));
  for (const h of present) if (!h.template.includes('{l}') && h.template.startsWith('hook_')) out.push(h.template);
  const experts = (t: string): string[] => (t.includes('{e}') ? Array.from({ length: spec.moe?.nExperts ?? 0 }, (_, e) => t.replace('{e}', String(e))) : [t]);
  for (let l = 0; l < spec.nLayers; l++) for (const h of present) if (h.template.includes('{l}') && (!h.presentAt || h.presentAt(spec, l))) out.push(...experts(h.template.replace('{l}', String(l))));
  for (const h of present) if (!h.template.includes('{l}') && !h.template.startsWith('hook_')) out.push(h.template);
  return out;
}

/** Looks up the declaration of a concrete hook name; undefined if no such hook exists. */
export function hookInfo(name: string): HookInfo | undefined {
  const template = name.replace(/^blocks\.\d+\./, 'blocks.{l}.').replace(/^blocks\.\{l\}\.mlp\.experts\.\d+\./, 'blocks.{l}.mlp.experts.{e}.');
  return HOOKS.find((h) => h.template === template);
}

/**
 * Throws a clear error if `name` is not a hook point of this model.
 * @throws Error naming the closest valid hooks when the name is unknown or out of range.
 */
export function assertHook(spec: ModelSpec, name: string): void {
  if (hookNames(spec).includes(name)) return;
  const m = /^blocks\.(\d+)\./.exec(name);
  if (m && Number(m[1]) >= spec.nLayers) throw new Error(`hook "${name}": layer ${m[1]} does not exist (the model has layers 0..${spec.nLayers - 1})`);
  const ex = /^blocks\.\d+\.mlp\.experts\.(\d+)\./.exec(name);
  if (ex && spec.moe && Number(ex[1]) >= spec.moe.nExperts) throw new Error(`hook "${name}": expert ${ex[1]} does not exist (the model has experts 0..${spec.moe.nExperts - 1})`);
  const info = hookInfo(name);
  if (info?.presentAt && m && (!info.present || info.present(spec))) throw new Error(`hook "${name}" is not computed by layer ${m[1]} of this ${spec.modelType} model (${sparseAt(spec, Number(m[1])) ? 'a sparse, mixture-of-experts layer' : 'a dense layer'})`);
  if (info) throw new Error(`hook "${name}" is not computed by ${spec.modelType} models`);
  throw new Error(`unknown hook "${name}"; hooks look like blocks.3.hook_resid_post, blocks.0.attn.hook_pattern, hook_embed`);
}
