/**
 * The time left of a running job, as the progress line says it: measured on the job's own pace,
 * said only once that pace means something, and steady (it counts down between estimates instead
 * of jumping with every step's noise). Pure arithmetic; the Progress component holds the state.
 */

/** How far a job is: steps done of total, and optionally the same in units of equal cost. */
export interface StepCounts {
  done: number;
  total: number;
  /** Work done of total in units of equal cost, when steps differ in cost (a fork-points continuation runs from its position to the end: token positions). */
  work?: { done: number; total: number };
}

/** Steps a job must have done before its pace is measured (the first ones carry the warm-up: pipelines compiled, caches filled), and steps measured after them before a time left is said. */
export const ETA_MIN_STEPS = 3;

/** Where the pace is measured from: `at` seconds into the job, with `work` done and `done` steps (after the warm-up steps). */
export interface PaceBase { at: number; work: number; done: number }

/**
 * Seconds left of a job that has run `elapsed` seconds: its pace since `base` (seconds per unit of
 * work: `work` units when the job gives them, else steps) times the work left. null before
 * ETA_MIN_STEPS steps were measured after the base (no meaningful pace yet), and once all are done.
 */
export function etaSeconds(elapsed: number, steps: StepCounts, base: PaceBase): number | null {
  const { done, total } = steps.work ?? steps;
  if (steps.done - base.done < ETA_MIN_STEPS || steps.done >= steps.total || done >= total) return null;
  const measured = done - base.work, took = elapsed - base.at;
  if (!(measured > 0) || !(took > 0)) return null;
  return (took / measured) * (total - done);
}

/** The time left as the progress line holds it between renders: the pace's base, what it showed last, and at which step it last estimated. */
export interface EtaState { base: PaceBase | null; shown: ShownEta | null; step?: number }

/**
 * The next state at `elapsed` seconds with `steps` done: the base is set once ETA_MIN_STEPS steps
 * are done (the warm-up left out of the pace); the time left is estimated from it when a step
 * ends and shown steadily (steadyEta); between steps it only counts down (re-estimating there
 * would count the step in progress as time without work, and the estimate would creep up).
 */
export function nextEta(state: EtaState, elapsed: number, steps: StepCounts): EtaState {
  if (steps.done < ETA_MIN_STEPS) return { base: null, shown: null };
  const base = state.base ?? { at: elapsed, work: (steps.work ?? steps).done, done: steps.done };
  if (state.step === steps.done) {
    const shown = state.shown && { seconds: Math.max(0, state.shown.seconds - (elapsed - state.shown.at)), at: elapsed };
    return { base, shown, step: steps.done };
  }
  return { base, shown: steadyEta(state.shown, etaSeconds(elapsed, steps, base), elapsed), step: steps.done };
}

/** A time left as shown: `seconds` as of `at` (seconds since the job started). */
export interface ShownEta { seconds: number; at: number }

/** A re-estimate this far above the countdown (factor, plus seconds) is a real slowdown, said; below it, noise, not shown. */
const SLOWDOWN = { factor: 1.25, seconds: 2 };

/**
 * The time left to show at `now`, after `prev` was shown: it counts down in real time, takes any
 * re-estimate below the countdown (the job is faster), and goes up only for a re-estimate well
 * above it (SLOWDOWN: the job really slowed), never for a step's noise. null while there is no
 * estimate (etaSeconds).
 */
export function steadyEta(prev: ShownEta | null, estimate: number | null, now: number): ShownEta | null {
  if (estimate === null) return null;
  if (!prev) return { seconds: estimate, at: now };
  const countdown = Math.max(0, prev.seconds - (now - prev.at));
  const slowed = estimate > countdown * SLOWDOWN.factor + SLOWDOWN.seconds;
  return { seconds: estimate < countdown || slowed ? estimate : countdown, at: now };
}

/** "about 40 s", "about 3 min"; "under a second". */
export function duration(seconds: number): string {
  if (seconds < 1) return 'under a second';
  if (seconds < 90) return `about ${Math.round(seconds)} s`;
  return `about ${Math.round(seconds / 60)} min`;
}
