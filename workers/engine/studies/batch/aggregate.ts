/**
 * Summaries of a batch: the mean of each metric with a bootstrap interval, over all prompts and per
 * value of one variable (e.g. per number of distractors n). Shared by the runner's aggregate line and
 * the batch view's plot, so both show the same numbers.
 */
import { bootstrapMean, type MeanInterval } from '../../analysis/bootstrap';
import type { BatchMetric } from './metrics';
import type { BatchRow } from './batch';

export interface GroupSummary {
  /** The variable's value as written in the table. */
  value: string;
  /** The value as a number when every value of the variable is numeric, else its rank (0, 1, …). */
  x: number;
  stats: Partial<Record<BatchMetric, MeanInterval>>;
}

export interface BatchSummary {
  overall: Partial<Record<BatchMetric, MeanInterval>>;
  /** The grouping variable, when one was given. */
  by: string | null;
  /** One per distinct value, numeric values in increasing order, else in order of first appearance. */
  groups: GroupSummary[];
}

/** Whether every value is a finite number as written ("3", "-0.5"). */
export function allNumeric(values: readonly string[]): boolean {
  return values.length > 0 && values.every((v) => v.trim() !== '' && Number.isFinite(Number(v)));
}

/**
 * Means with 95 % percentile bootstrap intervals (bootstrap.ts), overall and grouped by `by`.
 * Rows with an error, and null values, are left out of each metric's statistics.
 * @throws Error when `by` is given but is not a variable of the rows.
 */
export function summarize(rows: readonly BatchRow[], metrics: readonly BatchMetric[], by?: string | null): BatchSummary {
  const ok = rows.filter((r) => !r.error);
  const stat = (rs: readonly BatchRow[]) => Object.fromEntries(metrics.map((m) => [m, bootstrapMean(rs.map((r) => r.metrics[m] ?? null))]));
  if (!by) return { overall: stat(ok), by: null, groups: [] };
  if (rows.length && !(by in rows[0].vars)) throw new Error(`"${by}" is not a variable of this study (variables: ${Object.keys(rows[0].vars).join(', ')})`);
  const values: string[] = [];
  for (const r of ok) if (!values.includes(r.vars[by])) values.push(r.vars[by]);
  const numeric = allNumeric(values);
  if (numeric) values.sort((a, b) => Number(a) - Number(b));
  return {
    overall: stat(ok), by,
    groups: values.map((value, i) => ({ value, x: numeric ? Number(value) : i, stats: stat(ok.filter((r) => r.vars[by] === value)) })),
  };
}
