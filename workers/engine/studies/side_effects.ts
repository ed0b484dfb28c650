/**
 * Side effects of an intervention and its operating window (DESIGN.md §3 "Operating window"; the
 * maths and the budgets: analysis/operating_window.ts). For every dose of a grid (and every layer
 * of a `{l}` hook):
 * - reach: the target margin's mean change over the target set's prompts, Δ = log p(good) −
 *   log p(bad) after each prompt (teacher-forced over multi-token futures, DESIGN.md §3 "Margin"),
 *   steered minus unsteered, with a percentile bootstrap interval over the prompts (analysis/bootstrap.ts);
 * - KL: the mean of KL(p_unsteered ‖ p_steered) of the next-token distribution over every position
 *   of every control text (pooled), nats — the dose–response sweep's side-effect cost taken over
 *   unrelated text instead of one prompt;
 * - Δll: the change of the control texts' log-likelihood, nats per predicted token (pooled), steered
 *   minus unsteered (negative: the steered model finds ordinary text less likely);
 * - each other behaviour's margin change over its set, with its interval.
 * Every text runs once unsteered as the reference of a PrefixCache (model/kv_prefix.ts); each dose
 * then computes only the positions from the first one the intervention touches (all of them for an
 * intervention at every position; none before a `{start}` selector). A dose that is the identity
 * (α = 0 of add / add_norm_preserving, θ = 0 of rotate) is the unsteered run itself: its KL and Δll
 * are 0 exactly and it costs no forward pass.
 */
import type { Engine } from '../engine';
import type { FutureInput, PromptInput, ResolvedFuture, ChatTurn } from '../prompt';
import { promptWith } from '../prompt';
import type { Intervention } from '../model/intervention';
import { PrefixCache } from '../model/kv_prefix';
import { firstTouchedPosition } from '../model/span';
import { logSumExp } from '../analysis/margin';
import { bootstrapMean, type BootstrapOptions, type MeanInterval } from '../analysis/bootstrap';
import { checkBudgets, controlSums, DEFAULT_BUDGETS, doseVerdict, operatingWindow, textLogLikelihood, type SideEffectBudgets } from '../analysis/operating_window';
import { logSoftmaxCpu } from '../ops/logits.cpu';
import type { InterventionSpec } from '../steering/spec';
import type { Progress } from '../progress';

/** A behaviour: prompts and the two futures whose margin measures it after each prompt. */
export interface BehaviourSet {
  /** Its name in results and messages ("happy vs sad"). */
  name: string;
  prompts: readonly string[];
  good: FutureInput;
  bad: FutureInput;
}

/** The key a dose sets, by intervention type. */
export type SideEffectDoseKey = 'alpha' | 'theta' | 'value';

/** The chat turn (ChatTurn: chat template, system prompt, tools) renders the target's and the others' prompts; the control texts never use it. */
export interface SideEffectsRequest extends ChatTurn {
  /**
   * The intervention without its dose (any spec type with one: add / add_norm_preserving → alpha,
   * rotate → theta in radians, sae_clamp → value); `{l}` in its hook with `layers`. The vector must
   * be inline or an SAE feature (the runner reads files first).
   */
  template: Omit<InterventionSpec, SideEffectDoseKey>;
  /** Block indices substituted for `{l}` (one row of results each); absent: the hook as written. */
  layers?: readonly number[];
  /** The dose grid (any order; the result is ascending). */
  doses: readonly number[];
  /** The behaviour the intervention is for: reach is its margin's change. */
  target: BehaviourSet;
  /** Unrelated texts (a story, a recipe): the KL and log-likelihood side effects are read on them. */
  control: readonly string[];
  /** Other behaviours whose margins should not move. */
  others?: readonly BehaviourSet[];
  /** Thresholds (DEFAULT_BUDGETS where absent). */
  budgets?: Partial<SideEffectBudgets>;
  /** The reach intervals' bootstrap (default 2000 resamples, 95 %, seed 0). */
  bootstrap?: BootstrapOptions;
}

export interface SideEffectsResult {
  /** Ascending [n_doses]. */
  doses: number[];
  doseKey: SideEffectDoseKey;
  /** The layer of each row, or null for one row at the hook as written. */
  layers: number[] | null;
  /** Hook of each row [rows]. */
  hooks: string[];
  /** Mean target margin change with its interval, nats [row][dose]. */
  reach: MeanInterval[][];
  /** Mean next-token KL over the control positions, nats [row][dose]. */
  kl: number[][];
  /** Control log-likelihood change, nats per token (steered − unsteered) [row][dose]. */
  deltaLl: number[][];
  /** Each other behaviour's mean margin change, nats [row][dose]. */
  others: { name: string; shift: MeanInterval[][] }[];
  /** What keeps each dose out of the window ([] = it passes) [row][dose]. */
  why: string[][][];
  pass: boolean[][];
  /** Per row: [lowest, highest] dose of the window (analysis/operating_window.ts operatingWindow), or null: empty. */
  window: ([number, number] | null)[];
  budgets: SideEffectBudgets;
  /** Without the intervention: the target's mean margin, the control's log-likelihood per token, each other set's mean margin. */
  unsteered: { margin: number; llPerToken: number; otherMargins: number[] };
  /** Prompts of the target set, control texts, control positions (KL terms), control tokens predicted (Δll terms). */
  counts: { target: number; control: number; positions: number; tokens: number };
  /** Positions the study ran (references, steered spans, future branches; rows PrefixCache restores internally not counted), and what running every text in full at every dose and once unsteered would cost. */
  reuse: { computed: number; full: number };
}

/** The key a dose sets for a spec type. @throws Error for types that take no dose. */
export function sideEffectDoseKey(type: InterventionSpec['type']): SideEffectDoseKey {
  if (type === 'add' || type === 'add_norm_preserving') return 'alpha';
  if (type === 'rotate') return 'theta';
  if (type === 'sae_clamp') return 'value';
  throw new Error(`the doses set alpha (add, add_norm_preserving), theta (rotate) or value (sae_clamp); a "${type}" intervention has no dose to vary`);
}

/** A dose at which the intervention leaves every activation as it is (h + 0·v = h; a rotation by 0). */
const isIdentity = (key: SideEffectDoseKey, dose: number) => dose === 0 && key !== 'value';

/** One text as run: its ids, and for a behaviour prompt its futures. */
interface Text { ids: number[]; prompt: PromptInput; good?: ResolvedFuture; bad?: ResolvedFuture }

/**
 * Runs the study.
 * @param resolve the engine Intervention a spec (with its dose) becomes for a run of prompt `p`
 *   (the registry passes the session's spec resolution: SAE features, checks against the model).
 * @param onProgress after each forward (total = texts × (1 + rows × doses)).
 * @param signal checked between forwards; when aborted it throws signal.reason.
 * @throws Error before any forward pass for: no dose, a dose that is not finite, two equal doses; a
 *   type without a dose or a template carrying its dose; `{l}` without layers or layers without
 *   `{l}`, a layer out of range; a negative or non-finite budget; an empty target set or control
 *   set, an empty prompt or control text, a control text of fewer than 2 tokens; a bad future; and
 *   an intervention that does not fit the model (its hook, its width), named "the intervention".
 */
export async function sideEffects(engine: Engine, req: SideEffectsRequest, resolve: (p: PromptInput, spec: InterventionSpec) => Promise<Intervention>, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<SideEffectsResult> {
  const doseKey = sideEffectDoseKey(req.template.type);
  const tpl = req.template as InterventionSpec;
  for (const k of ['alpha', 'theta', 'value', 't'] as const) if (tpl[k] !== undefined) throw new Error(`the intervention carries "${k}": leave the dose out, the doses set ${doseKey}`);
  if (req.doses.length === 0) throw new Error('no doses: give at least one dose (e.g. 0,2,4,8)');
  for (const d of req.doses) if (!Number.isFinite(d)) throw new Error(`dose ${d} is not a finite number: each dose sets ${doseKey}`);
  const doses = [...req.doses].sort((a, b) => a - b);
  for (let i = 1; i < doses.length; i++) if (doses[i] === doses[i - 1]) throw new Error(`dose ${doses[i]} is given twice: the window is read along distinct doses`);
  const budgets: SideEffectBudgets = { ...DEFAULT_BUDGETS, ...Object.fromEntries(Object.entries(req.budgets ?? {}).filter(([, v]) => v !== undefined)) };
  checkBudgets(budgets);
  const templated = req.template.hook.includes('{l}');
  if (templated && !req.layers?.length) throw new Error(`the hook "${req.template.hook}" has {l}: give the layers it stands for`);
  if (!templated && req.layers?.length) throw new Error(`layers were given but the hook "${req.template.hook}" has no {l} to put them in (e.g. blocks.{l}.hook_resid_post)`);
  for (const l of req.layers ?? []) if (!Number.isInteger(l) || l < 0 || l >= engine.spec.nLayers) throw new Error(`layer ${l} does not exist (the model has layers 0..${engine.spec.nLayers - 1})`);
  const hooks = templated ? req.layers!.map((l) => req.template.hook.replaceAll('{l}', String(l))) : [req.template.hook];
  if (req.control.length === 0) throw new Error('the control set is empty: side effects are read on unrelated text, so give at least one control text');
  const behaviours = [req.target, ...(req.others ?? [])];
  for (const s of behaviours) if (s.prompts.length === 0) throw new Error(`the set "${s.name}" has no prompts: its margin change is a mean over its prompts`);

  const encode = (p: PromptInput, what: string) => {
    if (p.prompt.trim() === '') throw new Error(`${what} is empty`);
    return engine.encodePrompt(p);
  };
  const setTexts: Text[][] = behaviours.map((s) => s.prompts.map((prompt, i) => {
    const p = promptWith(prompt, req);
    const ids = encode(p, `prompt ${i + 1} of the set "${s.name}"`);
    return { ids, prompt: p, good: engine.resolveFuture(ids, s.good, p, 'good'), bad: engine.resolveFuture(ids, s.bad, p, 'bad') };
  }));
  const control: Text[] = req.control.map((prompt, i) => {
    const p = { prompt };
    const ids = encode(p, `control text ${i + 1}`);
    if (ids.length < 2) throw new Error(`control text ${i + 1} (“${prompt}”) has ${ids.length} token: its log-likelihood needs at least 2 tokens (one predicted)`);
    return { ids, prompt: p };
  });
  // Every intervention resolved before the first forward pass, so a spec that does not fit fails fast.
  const texts = [...setTexts.flat(), ...control];
  const ivs = new Map<Text, (Intervention | null)[][]>();
  for (const t of texts) {
    const rows: (Intervention | null)[][] = [];
    for (const hook of hooks) {
      const row: (Intervention | null)[] = [];
      for (const dose of doses) row.push(isIdentity(doseKey, dose) ? null : await resolve(t.prompt, { ...req.template, hook, [doseKey]: dose } as InterventionSpec));
      rows.push(row);
    }
    ivs.set(t, rows);
  }

  const V = engine.spec.dVocab, R = hooks.length, D = doses.length;
  const total = texts.length * (1 + R * D);
  let done = 0;
  const reuse = { computed: 0, full: 0 };
  const kv = new PrefixCache(engine.model);
  const step = async () => {
    await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in between forwards (worker)
    signal?.throwIfAborted();
  };
  const tick = () => onProgress?.({ done: ++done, total });

  /** Teacher-forced log p(good) − log p(bad) after the last run's prompt rows (the cache holds them). */
  const sequenceMargin = async (t: Text, last: Float32Array, interventions: Intervention[]) => {
    const T = t.ids.length, first = logSoftmaxCpu(last, V);
    const logProb = async (f: ResolvedFuture) => {
      const per: number[] = [];
      for (const seq of f.sequences) {
        let lp = first[seq[0]];
        if (seq.length > 1) {
          const ids = [...t.ids, ...seq.slice(0, -1)];
          const out = await kv.extend(T, ids, { nPrompt: T, interventions, logits: 'all' });
          reuse.computed += seq.length - 1;
          for (let j = 1; j < seq.length; j++) lp += logSoftmaxCpu(out.logits!.subarray((j - 1) * V, j * V), V)[seq[j]];
        }
        per.push(lp);
      }
      return logSumExp(per);
    };
    return (await logProb(t.good!)) - (await logProb(t.bad!));
  };
  const branchLength = (t: Text) => Math.max(...[...t.good!.sequences, ...t.bad!.sequences].map((s) => s.length - 1));

  /** A behaviour prompt: its unsteered margin and its margin change at every [row][dose]. */
  const runBehaviour = async (t: Text): Promise<{ base: number; change: number[][] }> => {
    const T = t.ids.length;
    await step();
    const ref = await kv.reference(t.ids, { nPrompt: T, logits: 'last' });
    reuse.computed += T;
    reuse.full += T + branchLength(t);
    const base = await sequenceMargin(t, ref.logits!, []);
    tick();
    const change: number[][] = [];
    for (const row of ivs.get(t)!) {
      const out: number[] = [];
      for (const iv of row) {
        reuse.full += T + branchLength(t);
        if (!iv) { out.push(0); tick(); continue; }
        await step();
        const p = Math.min(firstTouchedPosition(iv, T, T + branchLength(t)), T - 1);
        const run = await kv.runFrom(p, t.ids, { nPrompt: T, interventions: [iv], logits: 'last' });
        reuse.computed += T - p;
        out.push((await sequenceMargin(t, run.logits!, [iv])) - base);
        tick();
      }
      change.push(out);
    }
    return { base, change };
  };

  const setRuns: { base: number; change: number[][] }[][] = [];
  for (const ts of setTexts) {
    const runs = [];
    for (const t of ts) runs.push(await runBehaviour(t));
    setRuns.push(runs);
  }
  const sums = Array.from({ length: R }, () => Array.from({ length: D }, () => ({ kl: 0, dll: 0 })));
  let positions = 0, tokens = 0, ll = 0;
  for (const t of control) {
    const T = t.ids.length;
    await step();
    const base = (await kv.reference(t.ids, { nPrompt: T, logits: 'all' })).logits!;
    reuse.computed += T;
    reuse.full += T;
    positions += T; tokens += T - 1;
    ll += textLogLikelihood(base, t.ids, V);
    tick();
    for (const [r, row] of ivs.get(t)!.entries()) {
      for (const [d, iv] of row.entries()) {
        reuse.full += T;
        const p = iv ? firstTouchedPosition(iv, T, T) : Infinity;
        if (p < T) {
          await step();
          const steered = (await kv.runFrom(p, t.ids, { nPrompt: T, interventions: [iv!], logits: 'all' })).logits!;
          reuse.computed += T - p;
          const s = controlSums(base.subarray(p * V), steered, t.ids, V, p);
          sums[r][d].kl += s.kl;
          sums[r][d].dll += s.dll;
        }
        tick();
      }
    }
  }

  const interval = (runs: { change: number[][] }[], r: number, d: number) => bootstrapMean(runs.map((x) => x.change[r][d]), req.bootstrap);
  const reach = hooks.map((_, r) => doses.map((_, d) => interval(setRuns[0], r, d)));
  const others = (req.others ?? []).map((s, i) => ({ name: s.name, shift: hooks.map((_, r) => doses.map((_, d) => interval(setRuns[i + 1], r, d))) }));
  const kl = sums.map((row) => row.map((s) => s.kl / positions));
  const deltaLl = sums.map((row) => row.map((s) => s.dll / tokens));
  const names = others.map((o) => o.name);
  const why = hooks.map((_, r) => doses.map((_, d) => doseVerdict({ reach: reach[r][d].mean, kl: kl[r][d], deltaLl: deltaLl[r][d], others: others.map((o) => o.shift[r][d].mean) }, budgets, names)));
  const pass = why.map((row) => row.map((w) => w.length === 0));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return {
    doses, doseKey, layers: templated ? [...req.layers!] : null, hooks,
    reach, kl, deltaLl, others, why, pass, window: pass.map((p) => operatingWindow(doses, p)), budgets,
    unsteered: { margin: mean(setRuns[0].map((x) => x.base)), llPerToken: ll / tokens, otherMargins: setRuns.slice(1).map((runs) => mean(runs.map((x) => x.base))) },
    counts: { target: req.target.prompts.length, control: control.length, positions, tokens },
    reuse,
  };
}
