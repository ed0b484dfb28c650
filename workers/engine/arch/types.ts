import type { Tensor } from '../backend/backend';
import type { QuantizedMatrix } from '../backend/quant';
import type { ModelSpec, ModelWeights } from './spec';

/** A Hugging Face `config.json`, as parsed JSON. */
export type HFConfig = Record<string, unknown>;

/** Host-side access to a checkpoint's tensors by HF state_dict name (decoded to float32). */
export interface WeightSource {
  has(name: string): boolean;
  /** @throws Error naming the tensor when it is absent. */
  get(name: string): { data: Float32Array; shape: number[] };
  /**
   * True when get() returns a new array on every call that nothing else holds (decoded from the
   * file's bytes): the loader then hands it to the backend without a copy (Backend.adopt).
   */
  readonly freshArrays?: boolean;
  names(): string[];
  /**
   * The tensor in block-quantised storage when the checkpoint holds it that way (a GGUF Q8_0 /
   * Q4_0 matrix, already in HF layout), else undefined: it is then uploaded as stored.
   */
  quant?(name: string): QuantizedMatrix | undefined;
}

/**
 * Uploads a weight; `name` is the checkpoint tensor it came from (named in errors, e.g. an f16 range
 * check); `quant`, when the checkpoint stores it block-quantised (then `data` is empty); `owned`, when
 * `data` is a new array nobody else holds, which the backend may keep as the tensor's storage.
 */
export type Upload = (data: Float32Array, shape: number[], name?: string, quant?: QuantizedMatrix, owned?: boolean) => Tensor;

/**
 * One architecture family, declared as what differs from the shared block (STYLE.md: TransformerLens
 * adapters, nanoGPT): config keys → ModelSpec, and HF weight names → canonical weights.
 */
export interface Architecture {
  /** HF `model_type` values this file handles. */
  modelTypes: string[];
  /**
   * Config → spec. Its wiring flags (gatedMlp, sandwichNorms, qkNorm) must match the block weights
   * `weights` returns: the Transformer refuses a mismatch (model/spec_checks.ts checkBlockWeights).
   * @throws Error when a required config key is missing or unsupported.
   */
  spec(config: HFConfig): ModelSpec;
  /**
   * Reads, converts ([in,out] → [out,in], fused splits) and uploads the weights. `config` is the
   * same config.json (keys such as tie_word_embeddings that shape loading but not the forward pass).
   * @throws Error when a tensor is missing or misshapen, or the checkpoint holds tensors it would ignore.
   */
  weights(spec: ModelSpec, src: WeightSource, upload: Upload, config: HFConfig): ModelWeights;
}
