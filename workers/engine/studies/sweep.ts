/**
 * Dose–response sweep (DESIGN.md §3 "Dose–response"): for every layer × dose, the final margin of
 * the two futures after the prompt and the side-effect cost KL(p_unsteered ‖ p_steered) of the
 * next-token distribution, in nats. One forward pass per (layer, dose), last-row logits only; the
 * unsteered distribution is computed once and reused.
 */
import type { Engine } from '../engine';
import type { FutureInput, PromptInput } from '../prompt';
import { rowMargin } from '../analysis/margin';
import { logSoftmaxCpu } from '../ops/logits.cpu';
import type { Intervention } from '../model/intervention';
import { parseSpec, toIntervention, type InterventionSpec } from '../steering/spec';
import type { Progress } from '../progress';
import type { SharedPrefix } from '../decision_point';

export interface SweepRequest extends PromptInput {
  good: FutureInput;
  bad: FutureInput;
  /**
   * The intervention with `{l}` in its hook (e.g. "blocks.{l}.hook_resid_post") and no dose:
   * type add / add_norm_preserving (dose = alpha) or rotate (dose = theta, radians). The vector
   * must be inline (resolve file paths first).
   */
  template: Omit<InterventionSpec, 'alpha' | 'theta'>;
  /** Block indices substituted for {l}. */
  layers: readonly number[];
  doses: readonly number[];
}

export interface SweepResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts), or null: the margins are read after it. */
  sharedPrefix?: SharedPrefix | null;
  layers: number[];
  doses: number[];
  /** Which spec key the doses set. */
  doseKey: 'alpha' | 'theta';
  /** Hook of each layer row. */
  hooks: string[];
  /** Δ = log p(good) − log p(bad) (first-token sets) at the last prompt position (the decision point) [layer][dose]. */
  margin: number[][];
  /** KL(p_unsteered ‖ p_steered) of the next token, nats [layer][dose]. */
  kl: number[][];
  /** Δ without any intervention. */
  unsteeredMargin: number;
}

/**
 * KL(p ‖ q) = Σ p_i (log p_i − log q_i) in nats, from log-probabilities [V]. Accumulated in
 * float64; terms with p_i = 0 contribute 0.
 */
export function klDivergence(logP: Float32Array, logQ: Float32Array): number {
  let s = 0;
  for (let i = 0; i < logP.length; i++) {
    const p = Math.exp(logP[i]);
    if (p > 0) s += p * (logP[i] - logQ[i]);
  }
  return s;
}

/** The key a dose sets for an intervention type. @throws Error for types without a dose. */
export function doseKeyOf(type: InterventionSpec['type']): 'alpha' | 'theta' {
  if (type === 'add' || type === 'add_norm_preserving') return 'alpha';
  if (type === 'rotate') return 'theta';
  throw new Error(`a dose sweep varies alpha (add, add_norm_preserving) or theta (rotate); "${type}" has no dose`);
}

/**
 * Runs the sweep as one job.
 * @param onProgress called after each forward pass with done/total (total = layers × doses).
 * @param signal checked before each forward pass; when aborted the sweep throws signal.reason
 *   (an AbortError DOMException unless the caller gave another reason).
 * @throws Error for a template without {l} or without a dose key, an unknown hook, a layer out of
 *   range, a vector of the wrong width, or a bad prompt or future.
 */
export async function doseResponse(engine: Engine, req: SweepRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<SweepResult> {
  const doseKey = doseKeyOf(req.template.type);
  if (!req.template.hook.includes('{l}')) throw new Error(`sweep hook template "${req.template.hook}" needs {l} for the layer, e.g. blocks.{l}.hook_resid_post`);
  if (req.layers.length === 0 || req.doses.length === 0) throw new Error('a sweep needs at least one layer and one dose');
  for (const l of req.layers) {
    if (!Number.isInteger(l) || l < 0 || l >= engine.spec.nLayers) throw new Error(`layer ${l} does not exist (the model has layers 0..${engine.spec.nLayers - 1})`);
  }
  for (const d of req.doses) if (!Number.isFinite(d)) throw new Error(`dose ${d} is not a finite number`);
  const { promptIds: ids, good, bad, sharedPrefix } = engine.decisionPoint(req, req.good, req.bad);
  const hooks = req.layers.map((l) => req.template.hook.replaceAll('{l}', String(l)));
  // Validate every cell's intervention before the first forward pass, so a bad layer fails fast.
  const cells = hooks.map((hook, li) => req.doses.map((dose) => {
    const label = `sweep layer ${req.layers[li]}`;
    return toIntervention(parseSpec({ ...req.template, hook, [doseKey]: dose }, label), engine.spec, { nPrompt: ids.length }, label);
  }));

  const nextLogProbs = async (interventions: readonly Intervention[]) => {
    const { logits } = await engine.run(ids, { interventions, logits: 'last' });
    return logSoftmaxCpu(logits, logits.length);
  };
  const base = await nextLogProbs([]);
  const unsteeredMargin = rowMargin(base, good.firstIds, bad.firstIds);
  const total = hooks.length * req.doses.length;
  const margin: number[][] = [], kl: number[][] = [];
  let done = 0;
  for (let li = 0; li < hooks.length; li++) {
    margin.push([]); kl.push([]);
    for (let di = 0; di < req.doses.length; di++) {
      await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in between forwards (worker)
      signal?.throwIfAborted();
      const lp = await nextLogProbs([cells[li][di]]);
      margin[li].push(rowMargin(lp, good.firstIds, bad.firstIds));
      kl[li].push(klDivergence(base, lp));
      onProgress?.({ done: ++done, total });
    }
  }
  return { layers: [...req.layers], doses: [...req.doses], doseKey, hooks, margin, kl, unsteeredMargin, sharedPrefix };
}
