import type { Tensor } from '../backend/backend';
import type { Transformer } from '../model/transformer';

/** Bytes of lens logits computed per chunk: [rows, d_vocab] f32 stays well under binding limits. */
export const LENS_CHUNK_BYTES = 64 << 20;

export interface LensResult {
  /** log-probs of the `cols` vocabulary ids for every row [rows, cols.length]. */
  gathered: Float32Array;
  /** Top-k ids and log-probs per row [rows, k]. */
  topIds: Int32Array;
  topLogProbs: Float32Array;
}

/**
 * Logit lens (nostalgebraist 2020): log_softmax(W_U · LN_f(h)) for every row of `stack`, with
 * LN_f recomputed on each vector (never the last layer's cached scale; TransformerLens issue 1076)
 * and the model's final soft-cap. Rows are processed in chunks of ≤ LENS_CHUNK_BYTES of logits so
 * a 256k vocabulary never needs one giant buffer; only the gathered columns and the top-k leave the device.
 * @param stack residual vectors [rows, d_model] (any layers).
 * @param cols vocabulary ids whose log-probs are returned (the futures' first tokens).
 * @param chunkBytes bytes of logits per chunk (tests shrink it to exercise the chunking).
 */
export async function logitLens(model: Transformer, stack: Tensor, cols: readonly number[], topK: number, chunkBytes = LENS_CHUNK_BYTES): Promise<LensResult> {
  const b = model.backend;
  const rows = stack.shape[0];
  const V = model.spec.dVocab;
  const chunk = Math.max(1, Math.floor(chunkBytes / (V * 4)));
  const gathered = new Float32Array(rows * cols.length);
  const topIds = new Int32Array(rows * topK);
  const topLogProbs = new Float32Array(rows * topK);
  const colIds = Int32Array.from(cols);
  for (let r0 = 0; r0 < rows; r0 += chunk) {
    const n = Math.min(chunk, rows - r0);
    const owned: Tensor[] = [];
    try {
      const part = rows === n ? stack : b.sliceRows(stack, r0, n);
      if (part !== stack) owned.push(part);
      const logits = model.unembed(part);
      owned.push(logits);
      const lp = b.logSoftmax(logits);
      owned.push(lp);
      const g = b.gatherCols(lp, colIds);
      owned.push(g);
      const top = await b.topk(lp, topK);
      gathered.set(await b.read(g), r0 * cols.length);
      topIds.set(top.indices, r0 * topK);
      topLogProbs.set(top.values, r0 * topK);
    } finally {
      for (const t of owned) b.release(t);
    }
  }
  return { gathered, topIds, topLogProbs };
}
