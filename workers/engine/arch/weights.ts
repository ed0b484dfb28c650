import type { Tensor } from '../backend/backend';
import type { LinearWeights, NormWeights } from './spec';
import type { Upload, WeightSource } from './types';
import type { QuantizedMatrix } from '../backend/quant';

/** A tensor on the host, as read from the checkpoint (float32, row-major). */
export interface HostTensor {
  data: Float32Array;
  shape: number[];
  /** checkpoint tensor name, kept through layout changes for error messages */
  name?: string;
  /** Set (and `data` empty) when the checkpoint stores the matrix block-quantised (GGUF Q8_0 / Q4_0). */
  quant?: QuantizedMatrix;
  /** `data` came straight from a WeightSource with freshArrays: nothing else holds it (Upload's `owned`). */
  owned?: boolean;
}

/** @throws Error when t is block-quantised: layout changes need float weights. */
function assertFloat(t: HostTensor, what: string): void {
  if (t.quant) throw new Error(`tensor "${t.name}" is stored block-quantised, and ${what} needs float weights (this architecture cannot load it from a quantised checkpoint)`);
}

/**
 * Transposes a 2-D tensor: GPT-2's Conv1D stores weights [in, out] (y = x·W + b), the engine wants
 * nn.Linear's [out, in].
 * @throws Error when t is not 2-D.
 */
export function transpose2d(t: HostTensor): HostTensor {
  assertFloat(t, 'transposing');
  if (t.shape.length !== 2) throw new Error(`transpose expects a 2-D tensor, got shape [${t.shape}]`);
  const [r, c] = t.shape;
  const out = new Float32Array(r * c);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = t.data[i * c + j];
  return { data: out, shape: [c, r], name: t.name };
}

/**
 * Rows `rows` of t (the first axis; a 1-D bias is one value per row) in that order → [rows.length, ...].
 * @throws Error on a row outside [0, t.shape[0]).
 */
export function gatherRows(t: HostTensor, rows: readonly number[]): HostTensor {
  assertFloat(t, 'splitting a fused projection');
  const width = t.data.length / t.shape[0];
  const out = new Float32Array(rows.length * width);
  rows.forEach((r, i) => {
    if (r < 0 || r >= t.shape[0]) throw new Error(`row ${r} is outside a tensor of shape [${t.shape}]`);
    out.set(t.data.subarray(r * width, (r + 1) * width), i * width);
  });
  return { data: out, shape: [rows.length, ...t.shape.slice(1)], name: t.name };
}

/** Row indices of consecutive blocks of the given sizes: [0..a), [a..a+b), ... (Phi-3 qkv_proj q|k|v, gate_up_proj gate|up; GPT-2 c_attn q|k|v). */
export function blockRows(sizes: readonly number[]): number[][] {
  const out: number[][] = [];
  let start = 0;
  for (const n of sizes) {
    out.push(Array.from({ length: n }, (_, i) => start + i));
    start += n;
  }
  return out;
}

/**
 * Row indices of q, k and v in GPT-NeoX's fused query_key_value, whose output rows are laid out
 * [heads, 3, head_dim] (per head: q, k, v). HF `GPTNeoXAttention._attn_projections_and_rope`.
 */
export function perHeadQkvRows(nHeads: number, dHead: number): [number[], number[], number[]] {
  const parts: [number[], number[], number[]] = [[], [], []];
  for (let h = 0; h < nHeads; h++) for (let p = 0; p < 3; p++) for (let e = 0; e < dHead; e++) parts[p].push((h * 3 + p) * dHead + e);
  return parts;
}

/**
 * Reads a checkpoint's tensors by HF state_dict name, converts their layout and uploads them.
 * Records every name it reads so that `assertAllUsed` can reject a checkpoint holding tensors the
 * architecture would silently ignore (a wrong architecture, a forgotten weight).
 */
export class WeightReader {
  private readonly used = new Set<string>();

  constructor(private readonly src: WeightSource, private readonly up: Upload) {}

  has(name: string): boolean {
    return this.src.has(name);
  }

  /**
   * The host copy of tensor `name`.
   * @param shape expected shape; omitted = not checked.
   * @throws Error when the tensor is absent or its shape differs from `shape`.
   */
  host(name: string, shape?: readonly number[]): HostTensor {
    const q = this.src.quant?.(name);
    const t = q ? { data: new Float32Array(0), shape: q.shape, quant: q } : this.src.get(name);
    if (shape && (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i]))) {
      throw new Error(`tensor "${name}" has shape [${t.shape}], config.json implies [${shape}]`);
    }
    this.used.add(name);
    return { ...t, name, owned: !q && this.src.freshArrays === true };
  }

  /** Uploads a host tensor; one marked `owned` is handed over (read it no more after this). */
  upload(t: HostTensor): Tensor {
    return this.up(t.data, t.shape, t.name, t.quant, t.owned);
  }

  /** Uploads tensor `name` as stored. @throws Error when absent or of another shape. */
  tensor(name: string, shape?: readonly number[]): Tensor {
    return this.upload(this.host(name, shape));
  }

  /** Uploads tensor `name` when the checkpoint has it. */
  optional(name: string, shape?: readonly number[]): Tensor | undefined {
    return this.src.has(name) ? this.tensor(name, shape) : undefined;
  }

  /**
   * nn.Linear `${prefix}.weight` [out, in] and, when present, `${prefix}.bias` [out].
   * @throws Error when the weight is absent or its shape is not [out, in].
   */
  linear(prefix: string, out: number, inp: number): LinearWeights {
    return { w: this.tensor(`${prefix}.weight`, [out, inp]), b: this.optional(`${prefix}.bias`, [out]) };
  }

  /**
   * GPT-2 Conv1D `${prefix}.weight` stored [in, out] (+ bias [out]), transposed to [out, in].
   * @throws Error when the weight is absent or its shape is not [in, out].
   */
  conv1d(prefix: string, inp: number, out: number): LinearWeights {
    return {
      w: this.upload(transpose2d(this.host(`${prefix}.weight`, [inp, out]))),
      b: this.optional(`${prefix}.bias`, [out]),
    };
  }

  /**
   * Splits a fused projection (weight [Σ rows, in] in nn.Linear layout, optional bias) into one
   * linear per row set, e.g. q|k|v or gate|up.
   * @param parts row indices of each output, from `blockRows` or `perHeadQkvRows`.
   * @param transposeFirst true for Conv1D weights stored [in, Σ rows].
   * @throws Error when the weight is absent or not [Σ rows, in] ([in, Σ rows] with transposeFirst).
   */
  fused(prefix: string, parts: readonly (readonly number[])[], inp: number, transposeFirst = false): LinearWeights[] {
    const rows = parts.reduce((a, p) => a + p.length, 0);
    const w = transposeFirst ? transpose2d(this.host(`${prefix}.weight`, [inp, rows])) : this.host(`${prefix}.weight`, [rows, inp]);
    const bias = this.has(`${prefix}.bias`) ? this.host(`${prefix}.bias`, [rows]) : undefined;
    return parts.map((p) => ({ w: this.upload(gatherRows(w, p)), b: bias ? this.upload(gatherRows(bias, p)) : undefined }));
  }

  /** Norm `${prefix}.weight` [dim] and, when present (LayerNorm), `${prefix}.bias` [dim]. */
  norm(prefix: string, dim: number): NormWeights {
    return { w: this.tensor(`${prefix}.weight`, [dim]), b: this.optional(`${prefix}.bias`, [dim]) };
  }

  /**
   * The LM head W_U [d_vocab, d_model]: `name` when the checkpoint has it (some tied checkpoints
   * still store a copy), else the embedding when the config ties them.
   * @throws Error when the head is absent and `tie_word_embeddings` is false.
   */
  unembed(name: string, embed: Tensor, tied: boolean, shape: readonly number[]): Tensor {
    if (this.has(name)) return this.tensor(name, shape);
    if (tied) return embed;
    throw new Error(`checkpoint has no "${name}" and config.json sets tie_word_embeddings: false`);
  }

  /**
   * Checks that every tensor in the checkpoint was read, apart from buffers matching `ignore`
   * (e.g. GPT-2's attn.bias causal masks, cached rotary inv_freq).
   * @throws Error listing the unread tensors.
   */
  assertAllUsed(ignore?: RegExp): void {
    const unused = this.src.names().filter((n) => !this.used.has(n) && !(ignore && ignore.test(n)));
    if (unused.length > 0) {
      const shown = unused.slice(0, 8).join(', ') + (unused.length > 8 ? `, … (${unused.length} in all)` : '');
      throw new Error(`checkpoint holds tensors this architecture does not use: ${shown} (is this the architecture config.json claims?)`);
    }
  }
}
