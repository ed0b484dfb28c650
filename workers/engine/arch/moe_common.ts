import type { ExpertWeights, MoeSpec } from './spec';
import type { HFConfig } from './types';
import { num } from './config';
import type { WeightReader } from './weights';

/**
 * The MoeSpec of a mixture-of-experts config: `num_experts` experts (Mixtral: `num_local_experts`),
 * `num_experts_per_tok` kept per token, each of width `dExpert`.
 * @param sparse per layer, whether its MLP is sparse.
 * @throws Error when a key is missing, k exceeds the experts, or router jitter / qkv clipping is set.
 */
export function moeSpec(c: HFConfig, o: { nLayers: number; dExpert: number; normTopk: boolean; dShared?: number; sparse?: boolean[] }): MoeSpec {
  const nExperts = num(c, ['num_local_experts', 'num_experts']);
  const topK = num(c, 'num_experts_per_tok');
  if (topK > nExperts) throw new Error(`config.json "num_experts_per_tok" ${topK} is larger than the ${nExperts} experts`);
  return {
    nExperts, topK, normTopk: o.normTopk, dExpert: o.dExpert, dShared: o.dShared ?? 0,
    sparse: o.sparse ?? new Array<boolean>(o.nLayers).fill(true),
  };
}

/**
 * The experts of one sparse layer under HF's per-expert names: `${prefix}.{e}.{gate,up,down}`
 * (`names` gives the three projection names: Mixtral w1/w3/w2, others gate_proj/up_proj/down_proj).
 * @throws Error when an expert's projection is missing or misshapen.
 */
export function readExperts(r: WeightReader, prefix: string, m: MoeSpec, dModel: number, names: { gate: string; up: string; down: string }): ExpertWeights[] {
  return Array.from({ length: m.nExperts }, (_, e) => readGatedMlp(r, `${prefix}.${e}`, m.dExpert, dModel, names));
}

/** One gated MLP `${prefix}.{gate,up,down}` of width dFf. */
export function readGatedMlp(r: WeightReader, prefix: string, dFf: number, dModel: number, names: { gate: string; up: string; down: string }): ExpertWeights {
  return {
    gate: r.linear(`${prefix}.${names.gate}`, dFf, dModel),
    up: r.linear(`${prefix}.${names.up}`, dFf, dModel),
    down: r.linear(`${prefix}.${names.down}`, dModel, dFf),
  };
}

/** HF gate_proj / up_proj / down_proj names (Qwen2-MoE, OLMoE experts and shared expert). */
export const PROJ_NAMES = { gate: 'gate_proj', up: 'up_proj', down: 'down_proj' } as const;

/**
 * Refuses config settings this engine does not implement for MoE families (OLMoE `clip_qkv`).
 * Mixtral's router_jitter_noise needs nothing: HF applies it only in training.
 * @throws Error naming the key.
 */
export function refuseUnsupportedMoe(c: HFConfig): void {
  if (c.clip_qkv !== undefined && c.clip_qkv !== null) throw new Error(`config.json "clip_qkv" ${JSON.stringify(c.clip_qkv)} is not supported (null is)`);
}
