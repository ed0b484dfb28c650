/** Massive activations per layer (Sun et al. 2024): largest |h| with its (token, dim) and max/median [n_layers+1 each]. */
export interface MassiveActivations {
  value: Float32Array;
  token: Int32Array;
  dim: Int32Array;
  ratio: Float32Array;
}

export interface ResidualStats {
  /** ‖h^l_t‖ [(n_layers+1)·T], the rows of the stack. */
  norms: Float32Array;
  massive: MassiveActivations;
}

/**
 * Residual-stream norms and massive activations (Sun et al. 2024, "Massive Activations in Large
 * Language Models", arXiv 2402.17762).
 * @param stack [(n_layers+1)·T, d_model]: row block l holds h^l (row 0 = embeddings).
 * @returns norms [(n_layers+1)·T]; per layer the largest |h| with its token and dimension, and the
 *   ratio of the largest to the median |h| over that layer.
 */
export function residualStats(stack: Float32Array, layers: number, T: number, d: number): ResidualStats {
  const norms = new Float32Array(layers * T);
  const value = new Float32Array(layers), ratio = new Float32Array(layers);
  const token = new Int32Array(layers), dim = new Int32Array(layers);
  const mags = new Float32Array(T * d);
  for (let l = 0; l < layers; l++) {
    let best = -1;
    for (let t = 0; t < T; t++) {
      let ss = 0;
      for (let e = 0; e < d; e++) {
        const v = stack[(l * T + t) * d + e];
        ss += v * v;
        const a = Math.abs(v);
        mags[t * d + e] = a;
        if (a > best) { best = a; token[l] = t; dim[l] = e; }
      }
      norms[l * T + t] = Math.sqrt(ss);
    }
    value[l] = best;
    const sorted = Float32Array.from(mags).sort();
    const median = sorted[Math.floor(sorted.length / 2)];
    ratio[l] = median > 0 ? best / median : Infinity;
  }
  return { norms, massive: { value, token, dim, ratio } };
}
