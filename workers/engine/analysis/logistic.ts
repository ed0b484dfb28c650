/**
 * L2-regularised binary logistic regression, fitted by Newton's method (IRLS) in float64, and its
 * k-fold cross-validation: the classifier of the linear probes (Alain & Bengio, arXiv 1610.01644).
 *
 * Objective (sklearn's `LogisticRegression(C = 1/λ)`): minimise over w ∈ R^d, b ∈ R
 *   J(w, b) = Σ_i [log(1 + e^{z_i}) − y_i z_i] + (λ/2)‖w‖²,  z_i = w·x_i + b,  y_i ∈ {0, 1};
 * the intercept b is not penalised. With λ > 0 J is strictly convex, so its minimiser is the unique
 * point where ∇J = 0: Xᵀ(σ(z) − y) + λw = 0 and Σ(σ(z) − y) = 0.
 *
 * When a training fold has fewer rows than features (d_model ≫ prompts), the minimiser lies in the
 * row span of X (representer theorem: any component of w orthogonal to the rows raises ‖w‖² and
 * leaves every z_i unchanged), so the fit runs on the n×r coordinates of the rows in an orthonormal
 * basis of that span (from the eigendecomposition of X Xᵀ), which gives the same w and b exactly and
 * costs O(n³) instead of O(d³). Linear algebra: ml-matrix (Cholesky, symmetric eigendecomposition).
 */
import { CholeskyDecomposition, EigenvalueDecomposition, Matrix } from 'ml-matrix';
import { seededRandom } from './sampling';
import { auroc } from './auroc';

export interface LogisticFit {
  /** Weights [d]. */
  w: Float64Array;
  /** Intercept. */
  b: number;
  /** Newton iterations used. */
  iterations: number;
}

/** log(1 + e^z) without overflow. */
function softplus(z: number): number {
  return z > 0 ? z + Math.log1p(Math.exp(-z)) : Math.log1p(Math.exp(z));
}

function sigmoid(z: number): number {
  return z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z));
}

/**
 * Fits the regularised logistic regression above: damped Newton steps (backtracking on J) over
 * [w; b], or, when n < d and λ > 0, over the rows' coordinates in their span, lifted back to w.
 * @param X rows [n, d] row-major (float64 or float32).
 * @param y labels [n], each 0 or 1.
 * @param lambda λ ≥ 0; λ = 0 is the maximum-likelihood fit, which exists only when the classes
 *   overlap (on separable data it stops at the iteration cap with a large ‖w‖).
 * @throws Error for mismatched sizes, labels other than 0/1, or a negative λ.
 */
export function fitLogistic(X: ArrayLike<number>, y: ArrayLike<number>, n: number, d: number, lambda: number, maxIterations = 100): LogisticFit {
  if (X.length !== n * d || y.length !== n) throw new Error(`fitLogistic: X has ${X.length} values and y ${y.length}; expected ${n}×${d} and ${n}`);
  if (!(lambda >= 0)) throw new Error(`fitLogistic: λ must be ≥ 0 (got ${lambda})`);
  for (let i = 0; i < n; i++) if (y[i] !== 0 && y[i] !== 1) throw new Error(`fitLogistic: label ${y[i]} at row ${i} is not 0 or 1`);
  if (n >= d || lambda === 0) return newton(X, y, n, d, lambda, maxIterations);
  const span = rowSpan(X, n, d);
  const fit = newton(span.coords, y, n, span.r, lambda, maxIterations);
  const w = new Float64Array(d);
  for (let q = 0; q < d; q++) {
    let s = 0;
    for (let c = 0; c < span.r; c++) s += span.basis[q * span.r + c] * fit.w[c];
    w[q] = s;
  }
  return { w, b: fit.b, iterations: fit.iterations };
}

/** Damped Newton on J over [w; b] (d + 1 unknowns). */
function newton(X: ArrayLike<number>, y: ArrayLike<number>, n: number, d: number, lambda: number, maxIterations: number): LogisticFit {
  const w = new Float64Array(d);
  let b = 0;
  const z = new Float64Array(n);
  const scores = (ww: Float64Array, bb: number, out: Float64Array) => {
    for (let i = 0; i < n; i++) {
      let s = bb;
      for (let j = 0; j < d; j++) s += X[i * d + j] * ww[j];
      out[i] = s;
    }
  };
  const objective = (ww: Float64Array, zz: Float64Array) => {
    let J = 0;
    for (let i = 0; i < n; i++) J += softplus(zz[i]) - y[i] * zz[i];
    let r = 0;
    for (let j = 0; j < d; j++) r += ww[j] * ww[j];
    return J + 0.5 * lambda * r;
  };
  scores(w, b, z);
  let J = objective(w, z);
  let it = 0;
  for (; it < maxIterations; it++) {
    // Gradient g and Hessian H over θ = [w; b].
    const g = new Float64Array(d + 1);
    const m = d + 1, h = new Float64Array(m * m); // lower triangle of H, row-major
    for (let i = 0; i < n; i++) {
      const p = sigmoid(z[i]);
      const r = p - y[i], s = p * (1 - p);
      for (let j = 0; j < d; j++) {
        const sx = s * X[i * d + j];
        g[j] += r * X[i * d + j];
        for (let k = 0; k <= j; k++) h[j * m + k] += sx * X[i * d + k];
        h[d * m + j] += sx;
      }
      g[d] += r;
      h[d * m + d] += s;
    }
    for (let j = 0; j < d; j++) {
      g[j] += lambda * w[j];
      h[j * m + j] += lambda;
    }
    const H = new Matrix(m, m);
    for (let j = 0; j < m; j++) for (let k = 0; k <= j; k++) { H.set(j, k, h[j * m + k]); H.set(k, j, h[j * m + k]); }
    let gmax = 0;
    for (const v of g) gmax = Math.max(gmax, Math.abs(v));
    if (gmax < 1e-10 * Math.max(1, n)) break;
    let chol = new CholeskyDecomposition(H);
    if (!chol.isPositiveDefinite()) {
      // λ = 0 with a rank-deficient design: a tiny ridge keeps the step defined.
      for (let j = 0; j <= d; j++) H.set(j, j, H.get(j, j) + 1e-9 * (1 + H.get(j, j)));
      chol = new CholeskyDecomposition(H);
    }
    const step = chol.solve(Matrix.columnVector(Array.from(g))).getColumn(0);
    let t = 1;
    const w2 = new Float64Array(d), z2 = new Float64Array(n);
    let J2 = Infinity;
    for (let tries = 0; tries < 40; tries++, t /= 2) {
      for (let j = 0; j < d; j++) w2[j] = w[j] - t * step[j];
      scores(w2, b - t * step[d], z2);
      J2 = objective(w2, z2);
      if (J2 <= J) break;
    }
    if (!(J2 <= J)) break; // no descent left at float64 precision
    b -= t * step[d];
    w.set(w2);
    z.set(z2);
    const done = J - J2 <= 1e-15 * Math.max(1, Math.abs(J));
    J = J2;
    if (done) { it++; break; }
  }
  return { w, b, iterations: it };
}

/**
 * Coordinates of the rows of Z [n, d] in an orthonormal basis of their span, and the basis
 * B [d, r] (Z B = coordinates; test rows are projected with the same B). From the symmetric
 * eigendecomposition Z Zᵀ = U Λ Uᵀ: B = Zᵀ U Λ^{-1/2}, coordinates U Λ^{1/2}, keeping λ_j >
 * 1e-10·λ_max (the span's dimension r ≤ n).
 */
function rowSpan(Z: ArrayLike<number>, n: number, d: number): { coords: Float64Array; basis: Float64Array; r: number } {
  const K = Matrix.zeros(n, n);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k <= i; k++) {
      let s = 0;
      for (let j = 0; j < d; j++) s += Z[i * d + j] * Z[k * d + j];
      K.set(i, k, s);
      K.set(k, i, s);
    }
  }
  const evd = new EigenvalueDecomposition(K, { assumeSymmetric: true });
  const ev = evd.realEigenvalues, U = evd.eigenvectorMatrix;
  const top = Math.max(0, ...ev);
  const keep = ev.map((v, j) => [v, j] as const).filter(([v]) => v > 1e-10 * top).map(([, j]) => j);
  const r = keep.length;
  const coords = new Float64Array(n * r), basis = new Float64Array(d * r);
  keep.forEach((j, c) => {
    const s = Math.sqrt(ev[j]);
    for (let i = 0; i < n; i++) coords[i * r + c] = U.get(i, j) * s;
    for (let q = 0; q < d; q++) {
      let acc = 0;
      for (let i = 0; i < n; i++) acc += Z[i * d + q] * U.get(i, j);
      basis[q * r + c] = acc / s;
    }
  });
  return { coords, basis, r };
}

/** Out-of-fold results of a cross-validated probe. */
export interface CrossValidation {
  /** Fraction of rows whose held-out prediction (z > 0 ⇒ 1) is right. */
  accuracy: number;
  /** AUROC of the pooled held-out decision values z (Mann–Whitney, ties counted ½). */
  auroc: number;
  /** Held-out decision value of each row [n]. */
  scores: Float64Array;
  /** Held-out decision value of each row of `also` [n] (crossValidate's `also`: row i scored by the probe of row i's fold). */
  alsoScores?: Float64Array;
}

/**
 * Stratified fold of each row: each class's rows in a seeded random order, dealt round-robin
 * into k folds (so every fold holds ⌊n_c/k⌋ or ⌈n_c/k⌉ rows of class c).
 * @throws Error when a class has fewer than k rows or k < 2.
 */
export function stratifiedFolds(y: ArrayLike<number>, k: number, seed: number): Int32Array {
  if (!Number.isInteger(k) || k < 2) throw new Error(`cross-validation needs at least 2 folds (got ${k})`);
  const fold = new Int32Array(y.length);
  const rand = seededRandom(seed);
  for (const c of [0, 1]) {
    const idx: number[] = [];
    for (let i = 0; i < y.length; i++) if (y[i] === c) idx.push(i);
    if (idx.length < k) throw new Error(`${k}-fold cross-validation needs at least ${k} examples of each class (class ${c} has ${idx.length})`);
    shuffle(idx, rand);
    idx.forEach((i, j) => { fold[i] = j % k; });
  }
  return fold;
}

/** Fisher–Yates in place with a seeded generator. */
export function shuffle<T>(a: T[], rand: () => number): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

/**
 * Mean and (population) standard deviation per feature over rows `rows` of X [·, d]; a feature
 * constant on them gets σ = 1 (only centred).
 */
function featureScales(X: ArrayLike<number>, rows: readonly number[], d: number): { mu: Float64Array; sd: Float64Array } {
  const mu = new Float64Array(d), sd = new Float64Array(d);
  for (const i of rows) for (let j = 0; j < d; j++) mu[j] += X[i * d + j];
  for (let j = 0; j < d; j++) mu[j] /= rows.length;
  for (const i of rows) for (let j = 0; j < d; j++) sd[j] += (X[i * d + j] - mu[j]) ** 2;
  for (let j = 0; j < d; j++) {
    const s = Math.sqrt(sd[j] / rows.length);
    sd[j] = s > 1e-12 * (1 + Math.abs(mu[j])) ? s : 1;
  }
  return { mu, sd };
}

/**
 * k-fold cross-validated logistic regression. Each fold standardises the features with the
 * training rows' mean and standard deviation (a feature constant on them is only centred), fits
 * the regularised model of fitLogistic and scores the held-out rows; nothing of a held-out row is seen by its fold's fit.
 * @param X rows [n, d]; y labels [n] in {0, 1}; fold the fold of each row (stratifiedFolds).
 * @param also optional rows [n, d] of the same examples measured otherwise (e.g. under an
 *   intervention): row i is scored by the probe of row i's fold, trained on X only (alsoScores).
 * @throws Error as fitLogistic, or when a fold's training rows hold a single class, or `also` has another size.
 */
export function crossValidate(X: ArrayLike<number>, y: ArrayLike<number>, n: number, d: number, fold: Int32Array, lambda: number, also?: ArrayLike<number>): CrossValidation {
  if (also && also.length !== n * d) throw new Error(`crossValidate: also has ${also.length} values; expected ${n}×${d}`);
  const k = Math.max(...fold) + 1;
  const scores = new Float64Array(n);
  const alsoScores = also ? new Float64Array(n) : undefined;
  for (let f = 0; f < k; f++) {
    const train: number[] = [], test: number[] = [];
    for (let i = 0; i < n; i++) (fold[i] === f ? test : train).push(i);
    if (test.length === 0) continue;
    const ytr = train.map((i) => y[i]);
    if (!ytr.includes(0) || !ytr.includes(1)) throw new Error(`fold ${f}: the training rows hold one class only`);
    const { mu, sd } = featureScales(X, train, d);
    const standardise = (rows: number[], src: ArrayLike<number> = X) => {
      const Z = new Float64Array(rows.length * d);
      rows.forEach((i, r) => { for (let j = 0; j < d; j++) Z[r * d + j] = (src[i * d + j] - mu[j]) / sd[j]; });
      return Z;
    };
    const Ztr = standardise(train);
    const fit = fitLogistic(Ztr, ytr, train.length, d, lambda);
    const score = (Zte: Float64Array, out: Float64Array) => test.forEach((i, r) => {
      let s = fit.b;
      for (let j = 0; j < d; j++) s += fit.w[j] * Zte[r * d + j];
      out[i] = s;
    });
    score(standardise(test), scores);
    if (also && alsoScores) score(standardise(test, also), alsoScores);
  }
  let right = 0;
  for (let i = 0; i < n; i++) if ((scores[i] > 0 ? 1 : 0) === y[i]) right++;
  return { accuracy: right / n, auroc: auroc(scores, y), scores, ...(alsoScores ? { alsoScores } : {}) };
}

/** A probe fitted on all rows, in the rows' own units: score(x) = b + w·x (a logit; > 0 predicts label 1). */
export interface RawProbe {
  /** Weights [d] on the raw features (the standardised fit's weights divided by each feature's standard deviation). */
  w: Float64Array;
  b: number;
}

/**
 * The probe of crossValidate fitted on every row: features standardised with all rows' mean and
 * standard deviation (a constant feature only centred), fitLogistic, then folded back to raw units,
 * w_j = w'_j / σ_j and b = b' − Σ_j w'_j μ_j / σ_j, so that b + w·x equals the standardised fit's
 * decision value at x exactly (in real arithmetic).
 * @param X rows [n, d]; y labels [n] in {0, 1}.
 * @throws Error as fitLogistic, or when y holds a single class.
 */
export function fitProbe(X: ArrayLike<number>, y: ArrayLike<number>, n: number, d: number, lambda: number): RawProbe {
  const ys = Array.from(y);
  if (!ys.includes(0) || !ys.includes(1)) throw new Error('fitProbe: the rows hold one class only');
  const { mu, sd } = featureScales(X, Array.from({ length: n }, (_, i) => i), d);
  const Z = new Float64Array(n * d);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) Z[i * d + j] = (X[i * d + j] - mu[j]) / sd[j];
  const fit = fitLogistic(Z, ys, n, d, lambda);
  const w = new Float64Array(d);
  let b = fit.b;
  for (let j = 0; j < d; j++) {
    w[j] = fit.w[j] / sd[j];
    b -= w[j] * mu[j];
  }
  return { w, b };
}
