/**
 * The operating window of an intervention (DESIGN.md §3 "Operating window"): over a grid of doses,
 * the doses whose reach (the target margin's mean change) is at least R while every side effect
 * stays within its budget — the mean next-token KL over a control text's positions, the drop of
 * its log-likelihood per token, and the change of other behaviours' margins — and the window, the
 * longest run of consecutive grid doses that all pass. Pure maths over arrays: the per-position
 * terms from two rows of logits, the budgets, the verdict per dose and the window.
 */

/** The thresholds a dose is held to. Units: nats (kl: per position; ll: per token). */
export interface SideEffectBudgets {
  /** R: the least mean margin change (nats) on the target set; toward the good future when > 0. */
  reach: number;
  /** Largest mean KL(p_unsteered ‖ p_steered) over the control positions (nats), ≥ 0. */
  kl: number;
  /** Largest drop of the control text's log-likelihood (nats per token), ≥ 0: a dose passes when Δll ≥ −ll. */
  ll: number;
  /** Largest |mean margin change| of any other behaviour's set (nats), ≥ 0. */
  other: number;
}

/**
 * The budgets used where the user sets none (stated in the Side effects view, the runner's help and
 * docs/guide.md): reach ≥ 1 nat (the odds of good over bad multiplied by e), KL ≤ 0.1 nats,
 * a log-likelihood drop ≤ 0.1 nats per token (the control text ≈ 10 % less likely per token),
 * other behaviours' margins moved by ≤ 0.5 nats.
 */
export const DEFAULT_BUDGETS: SideEffectBudgets = { reach: 1, kl: 0.1, ll: 0.1, other: 0.5 };

/** How each budget is named in messages (the runner passes its flags). */
export type BudgetNames = Record<keyof SideEffectBudgets, string>;
const BUDGET_NAMES: BudgetNames = { reach: 'the reach threshold R', kl: 'the KL budget', ll: 'the log-likelihood budget', other: "the other behaviours' budget" };

/**
 * Refuses budgets that cannot be met or read: a reach threshold that is not finite, a side-effect
 * budget that is negative or not finite.
 * @throws Error naming the budget (as `names` say), its value and why.
 */
export function checkBudgets(b: SideEffectBudgets, names: BudgetNames = BUDGET_NAMES): void {
  if (!Number.isFinite(b.reach)) throw new Error(`${names.reach} = ${b.reach} is not a finite number (nats of margin change)`);
  for (const k of ['kl', 'll', 'other'] as const) {
    if (!Number.isFinite(b[k])) throw new Error(`${names[k]} ${b[k]} is not a finite number`);
    if (b[k] < 0) throw new Error(`${names[k]} ${b[k]} is negative: a budget is the most a side effect may cost (a KL, a drop of log-likelihood, a margin shift in absolute value), so it is ≥ 0`);
  }
}

/** Row-wise log-softmax in float64: log p [V] of one row of logits [V]. */
function logSoftmax64(row: ArrayLike<number>): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > m) m = row[i];
  let s = 0;
  for (let i = 0; i < row.length; i++) s += Math.exp(row[i] - m);
  const lse = m + Math.log(s);
  const out = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) out[i] = row[i] - lse;
  return out;
}

/** Sums over a control text of what steering did at its positions (pooled over texts by addition). */
export interface ControlSums {
  /** Σ_t KL(p_unsteered(·|x≤t) ‖ p_steered(·|x≤t)), nats, over `positions` positions. */
  kl: number;
  positions: number;
  /** Σ_t [log p_steered(x_{t+1}|x≤t) − log p_unsteered(x_{t+1}|x≤t)], nats, over `tokens` predicted tokens. */
  dll: number;
  tokens: number;
}

/**
 * What steering changed on one control text, from the unsteered and steered logits of the same
 * positions, in float64. Position t's next-token distribution contributes to the KL for every t;
 * the log-likelihood terms are the positions that predict a token of the text (t + 1 < T).
 * @param base unsteered logits [n, V] of positions from..from+n−1 of the text.
 * @param steered steered logits [n, V] of the same positions.
 * @param ids the text's tokens [T] (from + n ≤ T).
 * @param from the first position the rows cover: the positions before it were not steered, so they add
 *   0 KL and 0 Δll but still count among the text's T positions and T − 1 tokens.
 * @throws Error when the two logit arrays differ in size or are not whole rows of V.
 */
export function controlSums(base: Float32Array, steered: Float32Array, ids: readonly number[], V: number, from = 0): ControlSums {
  if (base.length !== steered.length || base.length % V !== 0) throw new Error(`controlSums: logits of ${base.length} and ${steered.length} values are not equal whole rows of ${V}`);
  const n = base.length / V, T = ids.length;
  if (from + n > T) throw new Error(`controlSums: ${n} rows from position ${from} pass the text's ${T} tokens`);
  const out: ControlSums = { kl: 0, positions: T, dll: 0, tokens: T - 1 };
  for (let r = 0; r < n; r++) {
    const t = from + r;
    const lp = logSoftmax64(base.subarray(r * V, (r + 1) * V)), lq = logSoftmax64(steered.subarray(r * V, (r + 1) * V));
    for (let i = 0; i < V; i++) {
      const p = Math.exp(lp[i]);
      if (p > 0) out.kl += p * (lp[i] - lq[i]);
    }
    if (t + 1 < T) out.dll += lq[ids[t + 1]] - lp[ids[t + 1]];
  }
  return out;
}

/** The unsteered log-likelihood Σ_t log p(x_{t+1}|x≤t) of a text from its logits [T, V] (float64). */
export function textLogLikelihood(logits: Float32Array, ids: readonly number[], V: number): number {
  let s = 0;
  for (let t = 0; t + 1 < ids.length; t++) s += logSoftmax64(logits.subarray(t * V, (t + 1) * V))[ids[t + 1]];
  return s;
}

/** One dose's numbers, as the verdict reads them. */
export interface DoseEffects {
  /** Mean margin change on the target set (nats). */
  reach: number;
  /** Mean next-token KL over the control positions (nats). */
  kl: number;
  /** Change of the control log-likelihood, nats per token (steered − unsteered). */
  deltaLl: number;
  /** Mean margin change of each other behaviour (nats). */
  others: readonly number[];
}

/**
 * Whether a dose lies in the operating window, and what keeps it out: each failing criterion in
 * words with its number and its budget ([] when it passes).
 */
export function doseVerdict(e: DoseEffects, b: SideEffectBudgets, otherNames: readonly string[] = []): string[] {
  const why: string[] = [];
  const f = (x: number) => (Number.isFinite(x) ? x.toPrecision(3) : String(x));
  if (!(e.reach >= b.reach)) why.push(`reach ${f(e.reach)} < R = ${b.reach}`);
  if (!(e.kl <= b.kl)) why.push(`KL ${f(e.kl)} > ${b.kl}`);
  if (!(e.deltaLl >= -b.ll)) why.push(`Δll ${f(e.deltaLl)} < −${b.ll} nats/token`);
  e.others.forEach((x, i) => { if (!(Math.abs(x) <= b.other)) why.push(`${otherNames[i] ?? `other ${i + 1}`} moved ${f(x)} (|·| > ${b.other})`); });
  return why;
}

/**
 * The operating window over a grid: the lowest and highest dose of the longest run of consecutive
 * grid doses (in ascending order) that all pass; of two equally long runs, the one nearer dose 0
 * (then the lower). null when no dose passes: an empty window.
 * @param doses ascending, distinct [n]; pass [n].
 * @throws Error when the doses are not ascending and distinct or the lengths differ.
 */
export function operatingWindow(doses: readonly number[], pass: readonly boolean[]): [number, number] | null {
  if (doses.length !== pass.length) throw new Error(`operatingWindow: ${doses.length} doses but ${pass.length} verdicts`);
  for (let i = 1; i < doses.length; i++) if (!(doses[i] > doses[i - 1])) throw new Error('operatingWindow: doses must be ascending and distinct');
  let best: [number, number] | null = null;
  const dist = (a: number, b: number) => (a <= 0 && b >= 0 ? 0 : Math.min(Math.abs(a), Math.abs(b)));
  for (let i = 0; i < doses.length; i++) {
    if (!pass[i] || (i > 0 && pass[i - 1])) continue;
    let j = i;
    while (j + 1 < doses.length && pass[j + 1]) j++;
    const len = j - i;
    const bestLen = best ? doses.indexOf(best[1]) - doses.indexOf(best[0]) : -1;
    if (len > bestLen || (len === bestLen && best && dist(doses[i], doses[j]) < dist(best[0], best[1]))) best = [doses[i], doses[j]];
  }
  return best;
}
