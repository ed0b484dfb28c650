import type { Tensor } from '../backend/backend';
import type { ModelSpec, ModelWeights } from '../model/spec';

/** A Hugging Face `config.json`, as parsed JSON. */
export type HFConfig = Record<string, unknown>;

/** Host-side access to a checkpoint's tensors by HF state_dict name (decoded to float32). */
export interface WeightSource {
  has(name: string): boolean;
  /** @throws Error naming the tensor when it is absent. */
  get(name: string): { data: Float32Array; shape: number[] };
  names(): string[];
}

/** Uploads one host tensor to the backend. */
/** Uploads a weight; `name` is the checkpoint tensor it came from (named in errors, e.g. an f16 range check). */
export type Upload = (data: Float32Array, shape: number[], name?: string) => Tensor;

/**
 * One architecture family, declared as what differs from the shared block (STYLE.md: TransformerLens
 * adapters, nanoGPT): config keys → ModelSpec, and HF weight names → canonical weights.
 */
export interface Architecture {
  /** HF `model_type` values this file handles. */
  modelTypes: string[];
  /** Config → spec. @throws Error when a required config key is missing or unsupported. */
  spec(config: HFConfig): ModelSpec;
  /**
   * Reads, converts ([in,out] → [out,in], fused splits) and uploads the weights. `config` is the
   * same config.json (keys such as tie_word_embeddings that shape loading but not the forward pass).
   * @throws Error when a tensor is missing or misshapen, or the checkpoint holds tensors it would ignore.
   */
  weights(spec: ModelSpec, src: WeightSource, upload: Upload, config: HFConfig): ModelWeights;
}
