import type { RowGroups, RowOp } from '../backend/backend';
import type { SaeClampOp } from './sae_site';

/**
 * Which token positions an intervention touches (DESIGN.md §2). Ranges are [start, end).
 * 'generated' = every position that predicts a generated token: n_prompt − 1 onward, so the first
 * new token is drawn under steering (the CAA off-by-one); {start: n_prompt} is the narrower set of
 * the generated tokens' own positions. 'prompt' = 0 … n_prompt − 1.
 */
export type PositionSelector = 'all' | 'prompt' | 'generated' | number[] | { start: number; end: number };

/** Generation steps [start, end) during which an intervention is active. Step 0 is the prompt pass. */
export interface StepWindow { start: number; end: number }

/**
 * An intervention as the forward pass sees it: a row op at one hook, restricted to positions and
 * generation steps. Order of application: interventions at the same hook apply in list order,
 * each to the output of the previous one.
 */
export interface Intervention {
  hook: string;
  /** A row op, or an SAE feature clamp (model/sae_site.ts), which needs the SAE's encoder. */
  op: RowOp | SaeClampOp;
  positions: PositionSelector;
  steps?: StepWindow;
  /** Per-head steering: the op acts on each selected column group (head) of the row on its own. */
  groups?: RowGroups;
}

/** Where a forward call sits in a run: absolute positions pos0..pos0+n-1, at generation step `step`. */
export interface CallSite {
  pos0: number;
  n: number;
  /** Length of the prompt (positions ≥ nPrompt are generated or teacher-forced tokens). */
  nPrompt: number;
  /**
   * 0 for the prompt pass; k for the pass that reads generated token k−1 (position nPrompt + k − 1;
   * a teacher-forced branch token there carries the same k: model/kv_prefix.ts stepOfPosition).
   */
  step: number;
}

/** True when the intervention's step window contains this call's step. */
export function activeAtStep(iv: Intervention, step: number): boolean {
  return !iv.steps || (step >= iv.steps.start && step < iv.steps.end);
}

/**
 * Row mask [n] for the call's positions: 1 where the selector includes absolute position pos0 + r.
 */
export function selectRows(sel: PositionSelector, site: CallSite): Uint8Array {
  const rows = new Uint8Array(site.n);
  for (let r = 0; r < site.n; r++) {
    const p = site.pos0 + r;
    let on: boolean;
    if (sel === 'all') on = true;
    else if (sel === 'prompt') on = p < site.nPrompt;
    else if (sel === 'generated') on = p >= site.nPrompt - 1;
    else if (Array.isArray(sel)) on = sel.includes(p);
    else on = p >= sel.start && p < sel.end;
    rows[r] = on ? 1 : 0;
  }
  return rows;
}
