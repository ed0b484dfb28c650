/**
 * A sparse autoencoder resident on a backend, encoding and decoding with the backend's own ops
 * (linear, rowOp, saeActivation), so it runs on the CPU reference and on WebGPU alike.
 *
 *   standard (SAELens):  hidden_pre = (x − b_dec·[apply_b_dec_to_input]) W_enc + b_enc;  f = relu(hidden_pre)
 *   jumprelu (Gemma Scope, Rajamanoharan et al. 2024, arXiv 2407.14435):  f = hidden_pre · (hidden_pre > threshold)
 *   topk (Gao et al. 2024, arXiv 2406.04093):  f = relu(hidden_pre) on the k largest, 0 elsewhere
 *   x̂ = f W_dec + b_dec;  error = x − x̂
 * (SAELens `sae_lens/saes/*_sae.py` encode/decode; Gemma Scope tutorial `JumpReLUSAE`.)
 */
import type { Backend, Tensor } from '../backend/backend';
import { transpose2d } from '../arch/weights';
import type { ModelSpec } from '../arch/spec';
import { hookWidth } from '../model/hook_width';
import type { SaeConfig } from './config';

/**
 * Checks that an SAE can read this model's hook: the hook exists and is [pos, width] with
 * width = d_in.
 * @throws Error saying the SAE's hook and d_in and what the model has there.
 */
export function assertSaeFitsModel(cfg: SaeConfig, model: ModelSpec, label = 'SAE'): void {
  let width: number, symbol: string;
  try {
    ({ width, symbol } = hookWidth(model, cfg.hookName));
  } catch (e) {
    throw new Error(`${label} reads ${cfg.hookName}, which this model cannot give it: ${(e as Error).message}`);
  }
  if (width !== cfg.dIn) {
    throw new Error(`${label} has d_in = ${cfg.dIn}, but ${cfg.hookName} is [pos, ${symbol}] = ${width} wide in this model (${model.modelType}, d_model ${model.dModel}); it was trained on ${cfg.modelName ?? 'another model'}`);
  }
}

/** An SAE's weights on a backend; `release()` frees them. */
export class Sae {
  readonly cfg: SaeConfig;
  readonly label: string;
  /** W_dec [d_sae, d_in] on the host: decoder rows for steering, the lens and attributions. */
  readonly W_dec: Float32Array;
  /** b_dec [d_in] on the host. */
  readonly b_dec: Float32Array;
  private readonly encT: Tensor; // W_encᵀ [d_sae, d_in] (nn.Linear layout)
  private readonly decT: Tensor; // W_decᵀ [d_in, d_sae]
  private readonly bEnc: Tensor; // [d_sae]
  private readonly bDec: Tensor; // [d_in]
  private readonly threshold: Tensor; // [d_sae]; zeros for ReLU and TopK
  private released = false;

  /**
   * Uploads the weights (W_enc and W_dec transposed to the linear layout).
   * @param model when given, the SAE is checked against it (assertSaeFitsModel).
   * @throws Error from assertSaeFitsModel, or the backend's allocation errors.
   */
  constructor(readonly backend: Backend, w: SaeWeights, model?: ModelSpec) {
    const { dIn, dSae } = w.cfg;
    if (model) assertSaeFitsModel(w.cfg, model, w.label);
    this.cfg = w.cfg;
    this.label = w.label;
    this.W_dec = w.W_dec;
    this.b_dec = w.b_dec;
    this.encT = backend.upload(transpose2d({ data: w.W_enc, shape: [dIn, dSae] }).data, [dSae, dIn]);
    this.decT = backend.upload(transpose2d({ data: w.W_dec, shape: [dSae, dIn] }).data, [dIn, dSae]);
    this.bEnc = backend.upload(w.b_enc, [dSae]);
    this.bDec = backend.upload(w.b_dec, [dIn]);
    this.threshold = w.threshold ? backend.upload(w.threshold, [dSae]) : backend.zeros([dSae]);
  }

  /**
   * hidden_pre and feature activations of x.
   * @param x [n, d_in] activations at cfg.hookName.
   * @returns pre [n, d_sae] (hook_sae_acts_pre) and acts [n, d_sae] (hook_sae_acts_post); the caller releases both.
   */
  encode(x: Tensor): { pre: Tensor; acts: Tensor } {
    const b = this.backend;
    this.alive();
    const xin = this.cfg.applyBDecToInput ? b.rowOp(x, { kind: 'add', v: this.b_dec, alpha: -1 }, new Uint8Array(x.size / this.cfg.dIn).fill(1)) : x;
    const pre = b.linear(xin, this.encT, this.bEnc);
    if (xin !== x) b.release(xin);
    const acts = b.saeActivation(pre, this.threshold, this.cfg.architecture === 'topk' ? this.cfg.k! : 0);
    return { pre, acts };
  }

  /** x̂ = f W_dec + b_dec. @param acts [n, d_sae] → [n, d_in] (hook_sae_recons). */
  decode(acts: Tensor): Tensor {
    this.alive();
    return this.backend.linear(acts, this.decT, this.bDec);
  }

  /** W_dec[f] [d_in], optionally scaled to unit L2 norm. @throws Error for f ∉ [0, d_sae). */
  decoderRow(f: number, unit = false): Float32Array {
    this.assertFeature(f);
    const d = this.cfg.dIn;
    const row = this.W_dec.slice(f * d, (f + 1) * d);
    if (unit) {
      let n = 0;
      for (const x of row) n += x * x;
      n = Math.sqrt(n);
      if (n > 0) for (let i = 0; i < d; i++) row[i] /= n;
    }
    return row;
  }

  /** @throws Error naming the valid range when f is not a feature index of this SAE. */
  assertFeature(f: number): void {
    if (!Number.isInteger(f) || f < 0 || f >= this.cfg.dSae) throw new Error(`feature ${f} does not exist: ${this.label} has features 0..${this.cfg.dSae - 1}`);
  }

  /** Frees the backend tensors (the host decoder stays readable). */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const t of [this.encT, this.decT, this.bEnc, this.bDec, this.threshold]) this.backend.release(t);
  }

  private alive(): void {
    if (this.released) throw new Error(`${this.label} was unloaded`);
  }
}

/**
 * Bytes an SAE needs on the device: W_enc and W_dec (float32, both transposed copies), the biases
 * and threshold, plus hidden_pre, activations and one temporary [tokens, d_sae] each for an
 * encode of `tokens` positions.
 */
export function saeMemoryBytes(dIn: number, dSae: number, tokens: number): { weightBytes: number; activationBytes: number; totalBytes: number } {
  const weightBytes = 4 * (2 * dIn * dSae + 2 * dSae + dIn);
  const activationBytes = 4 * (3 * tokens * dSae + 3 * tokens * dIn);
  return { weightBytes, activationBytes, totalBytes: weightBytes + activationBytes };
}

/** An SAE's configuration and weights on the host, float32, row-major. */
export interface SaeWeights {
  cfg: SaeConfig;
  /** Where it came from, for messages and the UI ("stories260K-…-relu (/path)"). */
  label: string;
  /** [d_in, d_sae] */
  W_enc: Float32Array;
  /** [d_sae, d_in] */
  W_dec: Float32Array;
  /** [d_sae] */
  b_enc: Float32Array;
  /** [d_in] */
  b_dec: Float32Array;
  /** [d_sae], JumpReLU only. */
  threshold?: Float32Array;
}
