/**
 * Which tokens an intervention acts on, so that nothing steered is hidden (DESIGN.md §2: positions
 * and steps are shown on the token strip). The position rule is the engine's own selectRows; a
 * forward pass at generation step k (0 = the prompt pass) applies an intervention when k lies in its
 * step window.
 */
import { selectRows } from '../../workers/shared';
import type { InterventionDraft } from '../store/steering';
import type { AppliedIntervention } from '../store/results';
import type { LibraryEntry } from '../store/vectors';

/** True when generation step `step` lies in the draft's step window [start, end). */
export function inStepWindow(d: Pick<InterventionDraft, 'steps'>, step: number): boolean {
  return !d.steps || (step >= d.steps.start && (d.steps.end === null || step < d.steps.end));
}

/** Prompt positions (0..nPrompt−1) the intervention changes in the prompt pass (step 0). */
export function steeredPromptPositions(d: InterventionDraft, nPrompt: number): number[] {
  if (!inStepWindow(d, 0)) return [];
  const rows = selectRows(d.positions, { pos0: 0, n: nPrompt, nPrompt, step: 0 });
  return Array.from(rows.keys()).filter((t) => rows[t] === 1);
}

/**
 * Whether the forward pass that drew generated token k applied the intervention: pass 0 reads the
 * prompt, pass k ≥ 1 reads position nPrompt + k − 1 (the token drawn at step k − 1).
 */
export function drawnUnderSteering(d: InterventionDraft, nPrompt: number, k: number): boolean {
  if (!inStepWindow(d, k)) return false;
  if (k === 0) return steeredPromptPositions(d, nPrompt).length > 0;
  return selectRows(d.positions, { pos0: nPrompt + k - 1, n: 1, nPrompt, step: k })[0] === 1;
}

/** For each prompt position, the numbers (#n) of the interventions that act on it. */
export function promptMarks(applied: readonly AppliedIntervention[], nPrompt: number): number[][] {
  const marks: number[][] = Array.from({ length: nPrompt }, () => []);
  for (const a of applied) for (const t of steeredPromptPositions(a.draft, nPrompt)) marks[t].push(a.n);
  return marks;
}

/** A short description of a position selector ("all", "prompt", "3, 5", "2–6"). */
export function positionsText(p: InterventionDraft['positions']): string {
  if (typeof p === 'string') return p;
  if (Array.isArray(p)) return p.length ? `positions ${p.join(', ')}` : 'no positions';
  return `positions ${p.start}–${p.end - 1}`;
}

/** A short description of a step window ("every step", "steps 3–∞"). */
export function stepsText(s: InterventionDraft['steps']): string {
  if (!s) return 'every step';
  return `steps [${s.start}, ${s.end === null ? '∞' : s.end})`;
}

/** The dose as the spec writes it ("α = 4", "θ = 0.5 rad", "t = 0.3", "mode project", "patch"). */
export function doseText(d: Pick<InterventionDraft, 'type' | 'dose' | 'rotateBy' | 'mode'>): string {
  switch (d.type) {
    case 'add':
    case 'add_norm_preserving': return `α = ${d.dose}`;
    case 'rotate': return d.rotateBy === 'theta' ? `θ = ${d.dose} rad` : `t = ${d.dose}`;
    case 'ablate': return `mode ${d.mode}`;
    case 'patch': return 'from the source prompt';
    case 'sae_clamp': return `clamp to c = ${d.dose}`;
    case 'ban_experts': return 'experts banned';
    case 'force_experts': return 'experts forced';
    case 'set_expert_weights': return 'routing weights set';
    case 'patch_route': return 'routing from the source prompt';
  }
}

/**
 * One applied intervention in words, as notices and figure captions name it:
 * "#1 add α = 6 of “CAA happy vs sad” at blocks.3.hook_resid_post".
 */
export function interventionText({ n, draft: d }: AppliedIntervention, vectors: readonly Pick<LibraryEntry, 'id' | 'name'>[]): string {
  const vector = d.saeFeature ? `SAE feature ${d.saeFeature.feature}` : vectors.find((v) => v.id === d.vectorId)?.name;
  return `#${n} ${d.type} ${doseText(d)}${vector ? ` of “${vector}”` : ''} at ${d.hook}`;
}
