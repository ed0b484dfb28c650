import type { Tensor } from '../backend/backend';
import type { Transformer } from '../model/transformer';
import { setMargins } from '../analysis/margin';

/**
 * Logit-lens logits of a few vocabulary ids (nostalgebraist 2020): W_U[cols] · LN_f(h) (+ bias,
 * then the model's final soft-cap) for every row of `stack`, with LN_f recomputed on each vector
 * (never the last layer's cached scale; TransformerLens issue 1076).
 *
 * Only the `cols` rows of the unembedding are multiplied, so the lens costs rows·|cols|·d_model
 * instead of rows·d_vocab·d_model. That is enough for every margin: log p(a) = logit_a − log Z with
 * the same normaliser Z for every token of a row, so for token sets
 * Δ = lse_{a∈A}(logit_a − log Z) − lse_{b∈B}(logit_b − log Z) = lse_A(logit) − lse_B(logit).
 * @param stack residual vectors [rows, d_model] (any layers).
 * @param cols vocabulary ids (the futures' first tokens), each in [0, d_vocab).
 * @returns logits [rows, cols.length] (unnormalised; see `setMargins`).
 */
export function lensColumnLogits(model: Transformer, stack: Tensor, cols: readonly number[]): Tensor {
  const b = model.backend, w = model.weights, s = model.spec;
  const ids = Int32Array.from(cols);
  const owned: Tensor[] = [];
  try {
    const wu = b.embed(w.unembed, ids, 1); // [cols, d_model]: the futures' rows of W_U
    owned.push(wu);
    let bias: Tensor | undefined;
    if (w.unembedBias) {
      bias = b.gatherCols(w.unembedBias, ids);
      owned.push(bias);
    }
    const nf = s.norm === 'rms' ? b.rmsNorm(stack, w.lnFinal.w, s.normEps, s.normOffset) : b.layerNorm(stack, w.lnFinal.w, w.lnFinal.b, s.normEps);
    owned.push(nf);
    const logits = b.linear(nf, wu, bias);
    if (s.finalSoftcap <= 0) return logits;
    owned.push(logits);
    return b.softcap(logits, s.finalSoftcap);
  } finally {
    for (const t of owned) b.release(t);
  }
}

/** The logit-lens margin grid of a prompt (DESIGN.md §3 "Logit-lens margin grid"). */
export interface LensMargins {
  /** Δ^l_t [(n_layers+1)·T]: row 0 = embeddings, row l = after block l (first-token sets). */
  lensMargin: Float32Array;
  /** Δ_t at the final layer [T] (= lensMargin row n_layers). */
  finalMargin: Float32Array;
}

/**
 * Logit-lens margins Δ^l_t = lse_{a∈good} logit^l_{t,a} − lse_{b∈bad} logit^l_{t,b} at every layer
 * and position, from the futures' first tokens' columns of W_U only (lensColumnLogits: the
 * normaliser cancels in Δ). nostalgebraist 2020, LN_f recomputed per vector.
 * @param stack residual stream [(n_layers+1)·T, d_model]: row block l holds h^l (0 = embeddings).
 * @param good, bad the futures' distinct first-token ids.
 */
export async function lensMargins(model: Transformer, stack: Tensor, T: number, good: number[], bad: number[]): Promise<LensMargins> {
  const L = model.spec.nLayers, b = model.backend;
  const cols = [...new Set([...good, ...bad])];
  const logits = lensColumnLogits(model, stack, cols);
  try {
    const lensMargin = setMargins(await b.read(logits), cols, good, bad);
    return { lensMargin, finalMargin: lensMargin.slice(L * T, (L + 1) * T) };
  } finally {
    b.release(logits);
  }
}

/** The k most likely next tokens of one lens cell. */
export interface LensTop {
  /** Token ids, most likely first (ties: lower id first) [k]. */
  ids: Int32Array;
  /** Their log-probs under log_softmax(W_U · LN_f(h)) (nats) [k]. */
  logProbs: Float32Array;
}

/**
 * Full-vocabulary logit lens of a few rows, for the cells a user points at (the margin grid never
 * needs the whole vocabulary): top-k of log_softmax(W_U · LN_f(h)) per row.
 * @param rows residual vectors [n, d_model] on the host.
 * @param k tokens per row, 1 ≤ k ≤ d_vocab.
 * @returns one LensTop per row.
 * @throws Error when rows is not a multiple of d_model or k is out of range.
 */
export async function lensTopK(model: Transformer, rows: Float32Array, k: number): Promise<LensTop[]> {
  const b = model.backend, D = model.spec.dModel, V = model.spec.dVocab;
  if (rows.length === 0 || rows.length % D !== 0) throw new Error(`lens rows: ${rows.length} values are not whole rows of d_model = ${D}`);
  if (!(Number.isInteger(k) && k >= 1 && k <= V)) throw new Error(`lens top-k: k = ${k} is outside [1, ${V}]`);
  const n = rows.length / D;
  const owned: Tensor[] = [];
  try {
    const h = b.upload(rows, [n, D]);
    owned.push(h);
    const logits = model.unembed(h);
    owned.push(logits);
    const lp = b.logSoftmax(logits);
    owned.push(lp);
    const top = await b.topk(lp, k);
    return Array.from({ length: n }, (_, r) => ({ ids: top.indices.slice(r * k, (r + 1) * k), logProbs: top.values.slice(r * k, (r + 1) * k) }));
  } finally {
    for (const t of owned) b.release(t);
  }
}

/**
 * The residual stacks of the latest analyses, kept on the host so the lens top tokens of a hovered
 * cell can be computed on demand (lensTopK) instead of for every cell. Holds the last `keep` stacks.
 */
export class LensStacks {
  private readonly stacks = new Map<number, { data: Float32Array; T: number; L1: number }>();
  private next = 1;

  constructor(private readonly keep = 2) {}

  /**
   * Keeps a stack [(n_layers+1)·T, d_model] (row l·T + t = h^l_t) and returns its handle.
   * The oldest stack beyond `keep` is dropped.
   */
  remember(data: Float32Array, L1: number, T: number): number {
    const handle = this.next++;
    this.stacks.set(handle, { data, T, L1 });
    for (const old of this.stacks.keys()) if (this.stacks.size > this.keep) this.stacks.delete(old);
    return handle;
  }

  /**
   * h^layer_position of a kept stack [d_model].
   * @throws Error for a handle no longer kept (a newer analysis replaced it) or a cell outside the grid.
   */
  row(handle: number, layer: number, position: number, dModel: number): Float32Array {
    const s = this.stacks.get(handle);
    if (!s) throw new Error('this analysis is no longer held by the worker (a newer one replaced it): press Analyse again');
    if (!(Number.isInteger(layer) && layer >= 0 && layer < s.L1 && Number.isInteger(position) && position >= 0 && position < s.T)) {
      throw new Error(`lens cell (layer ${layer}, position ${position}) is outside the grid of ${s.L1} layers × ${s.T} positions`);
    }
    const r = layer * s.T + position;
    return s.data.subarray(r * dModel, (r + 1) * dModel);
  }

  clear(): void { this.stacks.clear(); }
}
