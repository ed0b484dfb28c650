/**
 * The studies' one table: each row a study the worker exposes as one method of the same name
 * (inference.worker.ts wraps every row through `jobs.method`: cancel registration, quiet callbacks,
 * transferables) and the protocol types of (workers/protocol.ts StudyApi): its request, its
 * callbacks (a Progress first, for the app's generic runStudy) and its result are read off `run`.
 * A new study is one row here (its maths in its own module when it is more than a few lines).
 *
 * A row's `run` gets a StudyContext — the engine, the signal cancel() aborts and the session's
 * resolution of intervention specs — so requests carry interventions as specs (SpecRequest) and
 * the same row runs in the worker and the runner (cli/commands.ts).
 */
import type { Engine } from '../engine';
import { promptWith, type PromptInput } from '../prompt';
import type { Progress } from '../progress';
import type { Intervention } from '../model/intervention';
import type { Sae } from '../sae/sae';
import { atDecisionPoint, specInterventions, type SpecRequest } from './resolve_interventions';
import { doseResponse, type SweepRequest } from './sweep';
import { probeLayers, type ProbeRequest } from './probe';
import { probeUnderIntervention, type ProbeUnderRequest } from './probe_under';
import { interventionWindow, type WindowRequest } from './window';
import { generationActivations, type GenerationActivationsRequest } from './generation_activations';
import { patchingGrid, type PatchingRequest } from './patching';
import { routeStudy, type RouteRequest } from './route';
import { routeSweep, type RouteSweepRequest } from './route_sweep';
import { decisionReport, type ReportProgress, type ReportRequest } from './report';
import { decisionReportPair } from './report_pair';
import { runBatch, type BatchRequest, type BatchRow } from './batch/batch';
import { compareJob, type CompareJob } from './compare_job';
import { transferJob, type TransferRequest } from './transfer_job';
import { directLogitAttribution, type DlaRequest } from './dla';
import { flowAttribution, type FlowRequest } from './flow';
import { attributionPatching, type AtpRequest } from './atp';
import { hookGradient, tokenAttribution, type AttributionRequest, type GradRequest } from './integrated_gradients';
import { mechanismsStudy, type MechanismsRequest } from './mechanisms';
import { sideEffects, type SideEffectsRequest } from './side_effects';
import { spanFaithfulness, type SpanFaithfulnessRequest } from './span_faithfulness';

/** What a study's run gets besides its request. */
export interface StudyContext {
  engine: Engine;
  /** Aborted by cancel(): the study stops between forward passes. */
  signal: AbortSignal;
  /** The interventions `specs` resolve to for a run of prompt `p` (its forcedIds counted: atDecisionPoint) and, when generating, this many new tokens, on `on` (default `engine`; model B for the two-model report). */
  interventions(p: PromptInput, specs: SpecRequest, maxNewTokens?: number, on?: Engine): Promise<Intervention[]>;
  /** Model B beside `engine` (model A), for the model comparison; absent when none is loaded. */
  modelB?: Engine;
}

/**
 * A context over `engine`: specs resolve with specInterventions, SAEs named in them through
 * `loadSae` (the worker's loaded SAEs by id, the runner's by path).
 */
export function studyContext(engine: Engine, opts: { signal?: AbortSignal; loadSae?: (ref: string) => Promise<Sae> | Sae; modelB?: Engine | null } = {}): StudyContext {
  return {
    engine,
    ...(opts.modelB ? { modelB: opts.modelB } : {}),
    signal: opts.signal ?? new AbortController().signal,
    interventions: (p, specs, maxNewTokens, on = engine) =>
      specInterventions(on, { ...promptWith(p.prompt, p), ...(p.forcedIds?.length ? { forcedIds: p.forcedIds } : {}) }, specs, { maxNewTokens, loadSae: opts.loadSae }),
  };
}

/** One study: its name in cancel messages and how it runs. */
export interface Study<Req, Res, Callbacks extends unknown[]> {
  /** The study's name in words ("the patching grid"): a cancelled run rejects with CancelledError(what). */
  readonly what: string;
  /** 'resolves': a cancelled run settles by itself with what it has (a batch with the rows done). Default: it rejects. */
  readonly onCancel?: 'resolves';
  /** Runs it; callbacks (progress first) come through Comlink proxies in the worker. */
  run(ctx: StudyContext, req: Req, ...callbacks: Callbacks): Promise<Res>;
}

/** A row of the table, with its types inferred from `run`. */
const study = <Req, Res, Callbacks extends unknown[]>(s: Study<Req, Res, Callbacks>): Study<Req, Res, Callbacks> => s;

/** An intervention window as the UI asks for it: the intervention(s) as specs (SpecRequest), resolved in the worker. */
export type WindowJob = Omit<WindowRequest, 'interventions'> & SpecRequest;

/** A decision-point report as the UI asks for it: the changeable panel's intervention(s) as specs, resolved in the worker per prompt. */
export type ReportJob = Omit<ReportRequest, 'window'> & { window?: Omit<NonNullable<ReportRequest['window']>, 'interventions'> & SpecRequest };

/** A probe under an intervention as the UI asks for it: the intervention(s) as specs, resolved in the worker per prompt. */
export type ProbeUnderJob = Omit<ProbeUnderRequest, 'interventions'> & SpecRequest;

/** The expert routes as the UI asks for them: the experiment's interventions as specs, resolved in the worker. */
export type RouteJob = Omit<RouteRequest, 'interventions'> & SpecRequest;
/** The router-mask sweep as the UI asks for it (interventions as specs). */
export type RouteSweepJob = Omit<RouteSweepRequest, 'interventions'> & SpecRequest;
/** A batch study as the UI sends it (batch/batch.ts BatchRequest, interventions as specs). */
export type BatchJob = Omit<BatchRequest, 'interventions'>;

type OnProgress<P = Progress> = (p: P) => void;

/** The studies, by the worker method that runs each. */
export const STUDIES = {
  /**
   * Dose–response sweep (sweep.ts): margin and KL per layer × dose, onProgress after each forward
   * pass. cancel() stops it between forward passes (it rejects with a CancelledError).
   */
  sweep: study({
    what: 'the dose–response sweep',
    run: (c, req: SweepRequest, onProgress?: OnProgress) => doseResponse(c.engine, req, onProgress, c.signal),
  }),
  /**
   * Linear probes per layer (probe.ts): one forward per prompt, then cross-validated probes per
   * row; onProgress after each. cancel() stops it (it rejects with a CancelledError).
   * @throws Error for a set with fewer than 2 prompts per class or a position outside a prompt.
   */
  probe: study({
    what: 'the probes',
    run: (c, req: ProbeRequest, onProgress?: OnProgress) => probeLayers(c.engine, req, onProgress, c.signal),
  }),
  /**
   * Probes under an intervention (probe_under.ts): probes trained unsteered, read again under the
   * specs (resolved per prompt, before any forward pass); accuracy / AUROC steered, the score and
   * behaviour shifts and the flags. onProgress after each run and row. cancel() stops it (CancelledError).
   * @throws Error as probe does, for no spec or one that does not fit a prompt, a bad future, generate or τ.
   */
  probeUnder: study({
    what: 'the probe under an intervention',
    run: (c, req: ProbeUnderJob, onProgress?: OnProgress) => {
      const { specs, specLabels, ...rest } = req;
      return probeUnderIntervention(c.engine, { ...rest, interventions: (p) => c.interventions(p, { specs, specLabels }, rest.generate || undefined) }, onProgress, c.signal);
    },
  }),
  /**
   * Intervention window (window.ts): the generation regenerated with the specs switched on from
   * step k, k = 0..K, and the point of no return; onProgress after each token pass. cancel() stops
   * it between passes (it rejects with a CancelledError).
   * @throws Error for no spec, a spec that does not fit, K or a score outside the N steps.
   */
  interventionWindow: study({
    what: 'the intervention window',
    run: async (c, req: WindowJob, onProgress?: OnProgress) => {
      const { specs, specLabels, ...rest } = req;
      const interventions = await c.interventions(atDecisionPoint(c.engine, promptWith(rest.prompt, rest), rest.good, rest.bad), { specs, specLabels }, req.maxNewTokens);
      return interventionWindow(c.engine, { ...rest, interventions }, onProgress, c.signal);
    },
  }),
  /**
   * Activations while generating (generation_activations.ts): one [pos, width] hook at every step,
   * without and with the interventions (specs resolved for the generation's length), [steps, width]
   * each; onProgress after each run. cancel() stops a run between tokens.
   * @throws Error for a hook that is not [pos, width], a bad prompt, future or spec.
   */
  generationActivations: study({
    what: 'the activations while generating',
    run: async (c, req: Omit<GenerationActivationsRequest, 'interventions'> & SpecRequest, onProgress?: OnProgress) => {
      const { specs, specLabels, ...rest } = req;
      const interventions = await c.interventions(rest, { specs, specLabels }, req.maxNewTokens);
      return generationActivations(c.engine, { ...rest, interventions }, onProgress, c.signal);
    },
  }),
  /**
   * Activation patching grid (patching.ts): recovery per (layer, position) or (layer, head),
   * onProgress after each patched run. cancel() stops it between runs (CancelledError).
   * @throws Error for prompts of different token lengths (both named) or equal clean and corrupted margins.
   */
  patching: study({
    what: 'the patching grid',
    run: (c, req: PatchingRequest, onProgress?: OnProgress) => patchingGrid(c.engine, req, onProgress, c.signal),
  }),
  /**
   * Expert routes (route.ts): a mixture-of-experts model's routing per sparse layer and token and,
   * with futures, the route margin grid [layer][expert] (onProgress after each banned run); the
   * specs are resolved against the prompt and act on every run.
   * cancel() stops it between runs (CancelledError).
   * @throws Error for a dense model, one future without the other, a bad prompt or future.
   */
  route: study({
    what: 'the expert routes',
    run: async (c, req: RouteJob, onProgress?: OnProgress) => {
      const { specs, specLabels, ...rest } = req;
      return routeStudy(c.engine, { ...rest, interventions: await c.interventions(atDecisionPoint(c.engine, promptWith(rest.prompt, rest), rest.good, rest.bad), { specs, specLabels }) }, onProgress, c.signal);
    },
  }),
  /**
   * The router-mask sweep (route_sweep.ts, RoSais): N seeded masks of m routers, the rise of the
   * target future's log-prob under each, the worst mask and the quantiles (onProgress after each
   * mask). cancel() stops it between runs (CancelledError).
   * @throws Error for a dense model, a mask size outside 1..the sparse layers, a bad prompt or future.
   */
  routeSweep: study({
    what: 'the router-mask sweep',
    run: async (c, req: RouteSweepJob, onProgress?: OnProgress) => {
      const { specs, specLabels, ...rest } = req;
      return routeSweep(c.engine, { ...rest, interventions: await c.interventions(atDecisionPoint(c.engine, promptWith(rest.prompt, rest), rest.good, rest.bad), { specs, specLabels }) }, onProgress, c.signal);
    },
  }),
  /**
   * Attribution patching (atp.ts): the linear estimate of every patch of a patching grid from two
   * forwards and one backward, normalised like recovery; with compareExact the exact grid beside it,
   * their Spearman correlation and the cells that disagree. cancel() stops it before the exact grid.
   * @throws Error for prompts of different token lengths, equal margins, or a backward over the memory budget.
   */
  attributionPatching: study({
    what: 'attribution patching',
    run: (c, req: AtpRequest, onProgress?: OnProgress) => attributionPatching(c.engine, req, onProgress, c.signal),
  }),
  /**
   * Token attribution of the margin (integrated_gradients.ts): gradient × input, or integrated
   * gradients over the input embeddings with the completeness gap; onProgress after each IG step.
   * cancel() stops it between steps (CancelledError).
   * @throws Error for a corrupted baseline of another token length or a backward over the memory budget.
   */
  tokenAttribution: study({
    what: 'the token attribution',
    run: (c, req: AttributionRequest, onProgress?: OnProgress) => tokenAttribution(c.engine, req, onProgress, c.signal),
  }),
  /**
   * ∂Δ/∂h of the margin at one [pos, width] hook (integrated_gradients.ts hookGradient): one forward, one backward.
   * @throws Error for a hook that is not [pos, width] or a backward over the memory budget.
   */
  hookGradient: study({
    what: 'the gradient',
    run: (c, req: GradRequest) => hookGradient(c.engine, req),
  }),
  /**
   * Decision-point report (report.ts): visible / causal / changeable on one layer axis, onProgress
   * per prompt and stage; the window's specs are resolved per prompt. cancel() stops it (CancelledError).
   * @throws Error as patching does for the main prompt pair, as the window does for an intervention
   *   that does not fit the main prompt, as the probe does for a labelled set it refuses.
   */
  report: study({
    what: 'the decision-point report',
    run: (c, req: ReportJob, onProgress?: OnProgress<ReportProgress>) => {
      const { window: w, ...rest } = req;
      const window = w && { ...w, interventions: (p: PromptInput) => c.interventions(p, w, w.maxNewTokens) };
      return decisionReport(c.engine, { ...rest, window }, onProgress, c.signal);
    },
  }),
  /**
   * The decision-point report on model A (the engine) and model B (ctx.modelB) side by side
   * (report_pair.ts): both reports and B − A of visible layer, causal layer and point of no return,
   * with paired bootstrap intervals over a prompt set; the window's specs are resolved per prompt on
   * each model. cancel() stops it (CancelledError).
   * @throws Error when no model B is loaded, for models of different depths, and as `report` does.
   */
  reportPair: study({
    what: 'the two-model decision-point report',
    run: (c, req: ReportJob, onProgress?: OnProgress<ReportProgress>) => {
      if (!c.modelB) throw new Error('no model B is loaded: pick one in the Compare view first');
      const { window: w, ...rest } = req;
      const window = w && { ...w, interventions: (e: Engine, p: PromptInput) => c.interventions(p, w, w.maxNewTokens, e) };
      return decisionReportPair(c.engine, c.modelB, { ...rest, window }, onProgress, c.signal);
    },
  }),
  /**
   * A batch study (batch/batch.ts): every prompt of the template × values table analysed, its
   * metrics streamed through onRow. cancel() stops it between prompts and it resolves with the rows
   * done (cancelled = true); a prompt that fails becomes a row with its error.
   * @throws Error before anything runs for a template variable without a column or an unknown metric.
   */
  batch: study({
    what: 'the batch study',
    onCancel: 'resolves',
    run: (c, req: BatchJob & SpecRequest, onRow?: (r: BatchRow) => void, onProgress?: OnProgress) => {
      const { specs, specLabels, ...job } = req;
      const interventions = specs?.length ? (p: PromptInput) => c.interventions(p, { specs, specLabels }) : undefined;
      return runBatch(c.engine, { ...job, interventions }, onRow, onProgress, c.signal);
    },
  }),
  /**
   * Model comparison (compare_job.ts): model A (the engine) against model B (ctx.modelB) on one
   * prompt — weight diff, lens A / B / B − A, residual and sink divergence, cross-model patching in
   * both directions — with onProgress after each patched run. A pair that differs returns each
   * model's lens with what differs. cancel() stops it between runs (CancelledError).
   * @throws Error when no model B is loaded, for a bad prompt or future, or Δ_A = Δ_B.
   */
  compare: study({
    what: 'the model comparison',
    run: (c, req: CompareJob, onProgress?: OnProgress) => {
      if (!c.modelB) throw new Error('no model B is loaded: pick one in the Compare view first');
      return compareJob(c.engine, c.modelB, req, onProgress, c.signal);
    },
  }),
  /**
   * Steering transfer (transfer_job.ts): CAA vectors of one set built on model A and model B
   * (ctx.modelB) per layer, their cosine, and each applied to both models on the prompt; onProgress
   * per layer. cancel() stops it between layers (CancelledError).
   * @throws Error when no model B is loaded; ModelMismatchError for a pair that differs; Error for an empty set or a bad prompt.
   */
  steeringTransfer: study({
    what: 'the steering transfer',
    run: (c, req: TransferRequest, onProgress?: OnProgress) => {
      if (!c.modelB) throw new Error('no model B is loaded: pick one in the Compare view first');
      return transferJob(c.engine, c.modelB, req, onProgress, c.signal);
    },
  }),
  /**
   * Direct logit attribution of the margin (dla.ts): the final norm frozen at its scale on the run;
   * embeddings, attn_out / mlp_out per layer and heads per (layer, head), summing to the frozen margin.
   * One forward pass (onProgress once at the end).
   * @throws Error for a bad prompt or future, or a position outside the prompt.
   */
  dla: study({
    what: 'the direct logit attribution',
    run: async (c, req: DlaRequest, onProgress?: OnProgress) => {
      const r = await directLogitAttribution(c.engine, req);
      onProgress?.({ done: 1, total: 1 });
      return r;
    },
  }),
  /**
   * Flow attribution of the margin to tokens and spans (flow.ts), recursive through `generated`
   * greedy tokens, with deletion / insertion curves (faithfulness.ts). cancel() stops it between
   * forward passes (CancelledError).
   * @throws Error for a bad prompt or future, or a span outside the prompt.
   */
  flow: study({
    what: 'the flow attribution',
    run: async (c, req: FlowRequest, onProgress?: OnProgress) => {
      const r = await flowAttribution(c.engine, req, c.signal);
      onProgress?.({ done: 1, total: 1 });
      return r;
    },
  }),
  /**
   * Behaviour pairs (mechanisms.ts): per layer the cosines of two behaviours' CAA directions and
   * probes, the cross-steering matrix with bootstrap intervals, the natural correlation of their probe
   * scores, where each becomes causal, and a verdict. onProgress after each prompt and patched pair;
   * cancel() stops it between forward passes (CancelledError).
   * @throws Error before any forward pass for a dose that is not finite, an empty or one-class set,
   *   a layer outside the model, a bad future or prompt.
   */
  mechanisms: study({
    what: 'the mechanisms study',
    run: (c, req: MechanismsRequest, onProgress?: OnProgress) => mechanismsStudy(c.engine, req, onProgress, c.signal),
  }),
  /**
   * Side effects and the operating window of an intervention over a dose grid (side_effects.ts):
   * reach on the target set, next-token KL and log-likelihood change on the control texts, other
   * sets' margin changes, per layer of a {l} hook; onProgress after each forward. cancel() stops it
   * between forwards (CancelledError).
   * @throws Error before any forward for doses that are not finite, a negative budget, an empty
   *   control or target set, or an intervention that does not fit the model (named "the intervention").
   */
  sideEffects: study({
    what: 'the side-effects study',
    run: (c, req: SideEffectsRequest, onProgress?: OnProgress) =>
      sideEffects(c.engine, req, async (p, spec) => (await c.interventions(p, { specs: [spec], specLabels: ['the intervention'] }))[0], onProgress, c.signal),
  }),
  /**
   * Span faithfulness (span_faithfulness.ts): per method, each span's value and the deletion /
   * insertion curves over spans, for one prompt or a set, with bootstrap intervals over the prompts;
   * onProgress after each (prompt, method). cancel() stops it between forward passes (CancelledError).
   * @throws Error before anything runs for rows with different span labels, a span that does not resolve, a row without futures.
   */
  spanFaithfulness: study({
    what: 'the span faithfulness',
    run: (c, req: SpanFaithfulnessRequest, onProgress?: OnProgress) => spanFaithfulness(c.engine, req, onProgress, c.signal),
  }),
};

/** The table's type. */
export type Studies = typeof STUDIES;
/** A study's name (its worker method). */
export type StudyName = keyof Studies;
/** What study `N` is asked with. */
export type StudyRequest<N extends StudyName> = Parameters<Studies[N]['run']>[1];
/** The callbacks study `N` takes after its request (Comlink proxies across the worker boundary). */
export type StudyCallbacks<N extends StudyName> = Studies[N]['run'] extends (c: StudyContext, r: never, ...cb: infer C) => unknown ? C : never;
/** What study `N` resolves with. */
export type StudyResult<N extends StudyName> = Awaited<ReturnType<Studies[N]['run']>>;
/** The worker methods the table gives: one per study, its request then its callbacks. */
export type StudyApi = { [N in StudyName]: (req: StudyRequest<N>, ...callbacks: StudyCallbacks<N>) => Promise<StudyResult<N>> };
/** The studies whose first callback is a progress count (the app's generic runStudy drives those). */
export type ProgressStudy = { [N in StudyName]: StudyCallbacks<N> extends [((p: infer P) => void)?, ...unknown[]] ? (P extends Progress ? N : never) : never }[StudyName];
/** The progress study `N` reports. */
export type StudyProgress<N extends StudyName> = StudyCallbacks<N> extends [((p: infer P) => void)?, ...unknown[]] ? P : never;
