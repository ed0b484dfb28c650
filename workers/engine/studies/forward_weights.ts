/**
 * What the forward-only attributions (dla.ts, flow.ts) read of a model, on the host: the norms, the
 * value and output projections, and the futures' rows of the unembedding; and the margin readout
 * with the final norm frozen (analysis/frozen_norm.ts) that both decompose.
 */
import type { Engine } from '../engine';
import type { NormWeights } from '../arch/spec';
import { dot, frozenNormReadout, normScale, softmax64, type HostNorm } from '../analysis/frozen_norm';
import { logSumExp } from '../analysis/margin';

/** One block's weights as the attributions read them (nn.Linear layout [out, in]). */
export interface HostBlock {
  ln1: HostNorm;
  /** b_V [n_kv_heads·d_head] (W_V itself stays on the backend: flow.ts multiplies through it there). */
  bv?: Float32Array;
  /** W_O [d_model, n_heads·d_head] and its bias. */
  wo: Float32Array;
  bo?: Float32Array;
  /** Gemma 2's post-attention norm (sandwichNorms), else undefined. */
  postAttn?: HostNorm;
}

/** The host weights of one model for the forward-only attributions. */
export interface HostWeights {
  blocks: HostBlock[];
  lnFinal: HostNorm;
}

async function hostNorm(engine: Engine, n: NormWeights): Promise<HostNorm> {
  const s = engine.spec, b = engine.backend;
  return { kind: s.norm, w: await b.read(n.w), b: n.b ? await b.read(n.b) : undefined, eps: s.normEps, offset: s.normOffset };
}

/** Reads the norms, W_O, b_O and b_V of every block (`blocks: false`: the final norm only; `values: false`: no b_V). */
export async function hostWeights(engine: Engine, opts: { blocks?: boolean; values?: boolean } = {}): Promise<HostWeights> {
  const b = engine.backend, w = engine.model.weights;
  const blocks: HostBlock[] = [];
  if (opts.blocks ?? true) {
    for (const bw of w.blocks) {
      const values = opts.values ?? true;
      blocks.push({
        ln1: await hostNorm(engine, bw.ln1),
        bv: values && bw.v.b ? await b.read(bw.v.b) : undefined,
        wo: await b.read(bw.o.w), bo: bw.o.b ? await b.read(bw.o.b) : undefined,
        postAttn: bw.postAttnNorm ? await hostNorm(engine, bw.postAttnNorm) : undefined,
      });
    }
  }
  return { blocks, lnFinal: await hostNorm(engine, w.lnFinal) };
}

/** Rows of W_U [ids.length, d_model] and their unembedding biases (0 without one). */
export async function unembedRows(engine: Engine, ids: readonly number[]): Promise<{ rows: Float32Array; bias: Float64Array }> {
  const b = engine.backend, w = engine.model.weights;
  const i32 = Int32Array.from(ids);
  const t = b.embed(w.unembed, i32, 1);
  try {
    const rows = await b.read(t);
    const bias = new Float64Array(ids.length);
    if (w.unembedBias) {
      const all = await b.read(w.unembedBias);
      ids.forEach((id, k) => { bias[k] = all[id]; });
    }
    return { rows, bias };
  } finally {
    b.release(t);
  }
}

/** The mean row of W_U [d_model] and the mean unembedding bias, read in chunks of rows. */
export async function meanUnembedRow(engine: Engine): Promise<{ row: Float64Array; bias: number }> {
  const V = engine.spec.dVocab, D = engine.spec.dModel;
  const row = new Float64Array(D);
  let bias = 0;
  for (let v0 = 0; v0 < V; v0 += 4096) {
    const ids = Array.from({ length: Math.min(4096, V - v0) }, (_, k) => v0 + k);
    const u = await unembedRows(engine, ids);
    for (let k = 0; k < ids.length; k++) {
      for (let c = 0; c < D; c++) row[c] += u.rows[k * D + c];
      bias += u.bias[k];
    }
  }
  for (let c = 0; c < D; c++) row[c] /= V;
  return { row, bias: bias / V };
}

/**
 * The margin at one position as a linear readout of the final residual with the final norm's
 * scale frozen: frozen(x) = g·x + constant. The logits ℓ_a = W_U[a]·LN_f(x̂) + b_a (float64, before
 * any final soft-cap) of the futures' first tokens give each set's member weights π = softmax within
 * the set at the run, and frozen = Σ_{a∈good} π_a ℓ_a − Σ_{b∈bad} π_b ℓ_b.
 * Relation to the true margin Δ = lse_good ℓ − lse_bad ℓ: Δ = frozen + H(π_good) − H(π_bad) (the
 * sets' entropies; 0 for single tokens), exactly, at the vector x̂ the readout is taken at; with a
 * final soft-cap (Gemma 2) Δ is of the capped logits and is not a linear function of x.
 */
export interface MarginReadout {
  /** g [d_model]: frozen(x) = g·x + constant. */
  dir: Float64Array;
  constant: number;
  /** The final norm's σ at x̂. */
  sigma: number;
  /** frozen(x̂). */
  frozen: number;
  /** lse_good ℓ − lse_bad ℓ at x̂ (float64, uncapped). */
  margin: number;
  /** H(π_good) − H(π_bad) (nats). */
  entropyGap: number;
}

/**
 * The frozen-norm margin readout at a final residual row x̂ (see MarginReadout).
 * @param x the final residual [d_model] (float64: the sum of its parts).
 */
export function marginReadout(x: Float64Array, lnFinal: HostNorm, wu: { rows: Float32Array; bias: Float64Array }, cols: readonly number[], good: readonly number[], bad: readonly number[]): MarginReadout {
  const D = x.length;
  const sigma = normScale(x, lnFinal.kind, lnFinal.eps);
  // ℓ_a in float64 with σ = sigma: the readout of row a, at x̂.
  const logit = (a: number): { dir: Float64Array; constant: number; value: number } => {
    const k = cols.indexOf(a);
    const r = frozenNormReadout(wu.rows.subarray(k * D, (k + 1) * D), lnFinal, sigma);
    return { ...r, constant: r.constant + wu.bias[k], value: dot(r.dir, x, D) + r.constant + wu.bias[k] };
  };
  const dir = new Float64Array(D);
  let constant = 0, frozen = 0, entropyGap = 0;
  const side = (ids: readonly number[], sign: number): number => {
    const ls = ids.map(logit);
    const pi = softmax64(ls.map((l) => l.value));
    ls.forEach((l, k) => {
      for (let c = 0; c < D; c++) dir[c] += sign * pi[k] * l.dir[c];
      constant += sign * pi[k] * l.constant;
      frozen += sign * pi[k] * l.value;
    });
    entropyGap += sign * -pi.reduce((s, p) => s + (p > 0 ? p * Math.log(p) : 0), 0);
    return logSumExp(ls.map((l) => l.value));
  };
  const margin = side(good, 1) - side(bad, -1);
  return { dir, constant, sigma, frozen, margin, entropyGap };
}
