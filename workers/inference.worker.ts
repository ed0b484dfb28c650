/// <reference lib="webworker" />
import { float32ProbeFits } from './engine/model/quant_error';
import { estimateModel, judgePair, ModelTooLargeError, type DeviceLimits, type MemoryEstimate } from './engine/model/estimate';
import type { Backend } from './engine/backend/backend';
import { isGgufFolder } from './engine/model/load';
import type { ModelFiles } from './engine/io/model_files';
import * as Comlink from 'comlink';
import { Jobs, quiet } from './job';
import { Engine } from './engine/engine';
import { selectBackend } from './engine/backend/select';
import { deleteCachedModel, listCachedModels } from './engine/io/cache';
import { deviceLimits, filesFor } from './sources';
import { sizeLadder } from './engine/model/size_ladder';
import { BranchExplorer } from './engine/studies/branching/explorer';
import { forkPoints } from './engine/studies/branching/forks';
import { treePrompt, validateTree } from './engine/studies/branching/tree';
import type { Intervention } from './engine/model/intervention';
import { actAdd, caaVector } from './engine/studies/vectors';
import { type SteeringVector, type VectorProvenance } from './engine/steering/vector';
import { assertVectorFits, readVectorFile, writeVectorFile, type VectorFormat } from './engine/steering/vector_io';
import { hookWidth } from './engine/model/hook_width';
import type { BranchTokenEvent, DrawSettings, ExploreRequest, ForkPointsRequest, ForkProgress, ForkRequest, Progress, RestoreRequest, StudyApi } from './protocol';
import { STUDIES, studyContext, type Study } from './engine/studies/registry';
import { atDecisionPoint } from './engine/studies/resolve_interventions';
import type { AnalyseRequest, BackendChoice, FutureInput, GenerateRequest, InferenceApi, LibraryVector, LoadOptions, LoadProgress, ModelInfo, ModelSource, PromptInput, SpecRequest, TokenEvent, VectorRequest } from './protocol';
import { analyseSae, featureInfo } from './engine/studies/sae_features';
import { assertSaeFits } from './engine/sae/estimate';
import { readSae } from './engine/sae/files';
import { Sae } from './engine/sae/sae';
import { WebGpuBackend } from './engine/backend/webgpu';
import type { SaeAnalysisRequest, SaeInfo, SaeSource } from './protocol';

/**
 * Everything the worker holds between calls: the engine, the last analysed request (pattern,
 * activations and display strings read it), the branch tree, the loaded SAEs, the callback for a
 * lost device and the cancellable jobs.
 */
/**
 * The memory a model about to load needs (estimateModel: totalBytes), or null when it cannot be
 * estimated from headers (a GGUF folder has no config.json): then the loaded model is released first.
 * @throws the estimate's own errors for a safetensors folder (a truncated file, a bad header): the
 *   load would raise the same, and nothing has been released yet.
 */
async function newModelEstimate(files: ModelFiles, options: LoadOptions): Promise<MemoryEstimate | null> {
  if (await isGgufFolder(files)) return null;
  return estimateModel(files, { weightDtype: options.weightDtype, contextLength: options.contextLength });
}

class Session {
  engine: Engine | null = null;
  /** Model B beside the engine (model A), for the model comparison: its own backend, freed with it. */
  engineB: Engine | null = null;
  /** Memory estimates of A and B as loaded (null: loaded without the fit check, or not estimable): the pair must fit one budget. */
  estimateA: MemoryEstimate | null = null;
  estimateB: MemoryEstimate | null = null;
  lastAnalysed: AnalyseRequest | null = null;
  /** The branch tree forks continue from (with the prompt its specs resolve against). */
  explorer: { x: BranchExplorer; req: PromptInput } | null = null;
  deviceLostCallback: ((reason: string) => void) | null = null;
  /** Loaded SAEs by id; they live on the engine's backend and go with it. */
  readonly saes = new Map<string, Sae>();
  saeCount = 0;
  readonly jobs = new Jobs();

  /** The loaded engine. @throws Error when none is loaded or its GPU device was lost. */
  need(): Engine {
    const e = this.engine;
    if (!e) throw new Error('no model is loaded: pick one first');
    const lost = e.deviceLost;
    if (lost !== null) throw new Error(`the GPU device was lost (${lost}): load the model again to continue on a fresh device`);
    return e;
  }

  /** Model B, or null; @throws Error when its GPU device was lost. */
  modelB(): Engine | null {
    const b = this.engineB;
    if (b && b.deviceLost !== null) throw new Error(`model B's GPU device was lost (${b.deviceLost}): load model B again to continue`);
    return b;
  }

  /** Frees model B (model A and its SAEs stay). */
  unloadModelB(): void {
    this.engineB?.dispose();
    this.engineB = null;
    this.estimateB = null;
  }

  needSae = (id: string): Sae => {
    const s = this.saes.get(id);
    if (!s) throw new Error(`SAE "${id}" is not loaded (load it again in the SAE view)`);
    return s;
  };

  needTree(): { x: BranchExplorer; req: PromptInput } {
    if (!this.explorer) throw new Error('no branch tree: generate a trunk in the Branches view first');
    return this.explorer;
  }

  /** Frees the model, its SAEs and everything computed on it. */
  unloadModel(): void {
    for (const s of this.saes.values()) s.release();
    this.saes.clear();
    this.engine?.dispose();
    this.engine = null;
    this.estimateA = null;
    this.lastAnalysed = null;
    this.explorer = null;
  }

  /**
   * The request with its specs resolved into engine interventions (after the request's own), for a
   * run of prompt `at` (default the request's; an analysis passes its decision point, atDecisionPoint)
   * and, when generating, this many new tokens.
   */
  async resolveSpecs<R extends PromptInput & SpecRequest & { interventions?: AnalyseRequest['interventions'] }>(e: Engine, req: R, maxNewTokens?: number, at: PromptInput = req): Promise<R> {
    const { specs, specLabels, ...rest } = req;
    if (!specs?.length) return rest as R;
    const resolved = await this.specInterventions(e, at, { specs, specLabels }, maxNewTokens);
    return { ...rest, interventions: [...(req.interventions ?? []), ...resolved] } as R;
  }

  /** The interventions the specs resolve to for a run of this prompt (and this many new tokens). */
  specInterventions(e: Engine, p: PromptInput, specs: SpecRequest, maxNewTokens?: number): Promise<Intervention[]> {
    return studyContext(e, { loadSae: this.needSae }).interventions(p, specs, maxNewTokens);
  }

  /** Each id's display string on its own, after the last analysed prompt's first token (so " Tom" keeps its space). */
  displayStrings(e: Engine, ids: number[]): string[] {
    const prefix = this.lastAnalysed ? e.encodePrompt(this.lastAnalysed).slice(0, 1) : [];
    return ids.map((id) => e.tokenStrings([id], prefix)[0]);
  }
}

/**
 * Checks an imported vector against the model: the hook its file names (when the model has it),
 * else any steerable row width of the model.
 * @throws Error saying the vector's length and the widths this model has.
 */
function assertImportFits(e: Engine, name: string, v: Float32Array, hook: string | undefined): void {
  const names = e.info().hookNames;
  if (hook && names.includes(hook)) return assertVectorFits(v, e.spec, hook, name);
  const s = e.spec;
  const widths = new Map<number, string>();
  for (const h of names) {
    try { const w = hookWidth(s, h); if (!widths.has(w.width)) widths.set(w.width, w.symbol); } catch { /* not steerable */ }
  }
  if (!widths.has(s.dHead)) widths.set(s.dHead, 'd_head (one head)');
  if (widths.has(v.length)) return;
  const list = [...widths].map(([w, sym]) => `${sym} = ${w}`).join(', ');
  throw new Error(`${name} holds a vector of ${v.length} values, but ${e.label} has d_model = ${s.dModel} (steerable widths: ${list}); was it made for another model?`);
}

/** Provenance as an imported file records it (a vector written by exportVector keeps its own). */
function importedProvenance(p: Record<string, unknown> | undefined, method: string | undefined): VectorProvenance {
  const texts = (x: unknown) => (Array.isArray(x) ? x.filter((t): t is string => typeof t === 'string') : []);
  const m = p?.method ?? method;
  return {
    method: m === 'caa' || m === 'actadd' ? m : 'file',
    position: typeof p?.position === 'string' ? p.position : 'unknown',
    positive: texts(p?.positive),
    negative: texts(p?.negative),
    ...(typeof p?.head === 'number' ? { head: p.head } : {}),
  };
}

/** A built vector as the library holds it. */
function libraryVector(sv: SteeringVector): LibraryVector {
  return { vector: sv.vector, dModel: sv.dModel, hook: sv.hook, model: sv.modelId, provenance: sv.provenance, createdAt: new Date().toISOString() };
}


const session = new Session();
const { jobs } = session;

/** What a load has resolved before it builds its engine (loadBeside). */
interface ResolvedLoad {
  /** The backend of this load's own (Engine.dispose frees it: unloading one model never frees the other's buffers). */
  be: Backend;
  files: ModelFiles;
  /** The device limits the load was checked against; undefined with checkFit false. */
  limits: DeviceLimits | undefined;
  /** newModelEstimate's memory estimate (null: a GGUF folder, not estimable from headers). */
  estimate: MemoryEstimate | null;
}

/**
 * The part model A's and model B's loads share: a backend of the load's own, the source resolved
 * (Hub listing, config, safetensors headers) and its fit checked against the device limits and, as a
 * pair, beside the other model (judgePair: B always, A when a model B is loaded) before anything
 * loaded is touched, so a typo in a repo id, a gated repo or a model too large leaves the loaded
 * models as they were; then `build` makes the engine. The backend is disposed when anything throws.
 * @returns the built engine's info.
 * @throws ModelTooLargeError when the model (or the pair) does not fit; filesFor's, the estimate's and build's errors.
 */
async function loadBeside(side: 'A' | 'B', source: ModelSource, backend: BackendChoice, options: LoadOptions, signal: AbortSignal, build: (r: ResolvedLoad) => Promise<Engine>): Promise<ModelInfo> {
  const be = await selectBackend(backend, { threads: options.threads });
  let engine: Engine;
  try {
    const limits = options.checkFit === false ? undefined : deviceLimits(be, options.memoryBudgetBytes);
    const files = await filesFor(source, { limits, signal, weightDtype: options.weightDtype, contextLength: options.contextLength });
    const estimate = await newModelEstimate(files, options);
    if (limits && estimate && (side === 'B' || session.engineB)) {
      const v = side === 'A' ? judgePair(estimate, session.estimateB, limits, 'A') : judgePair(session.engine ? session.estimateA : null, estimate, limits, 'B');
      if (!v.fits) throw new ModelTooLargeError(v);
    }
    engine = await build({ be, files, limits, estimate });
  } catch (e) {
    be.dispose();
    throw e;
  }
  return engine.info();
}

/**
 * One worker method per row of the studies' table (engine/studies/registry.ts), each through
 * jobs.method as the job cancel() stops: an abort rejects with CancelledError(what), or lets the
 * study settle with what it has (onCancel 'resolves').
 */
function studyMethods(): StudyApi {
  const methods: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(STUDIES) as [string, Study<unknown, unknown, unknown[]>][]) {
    methods[name] = jobs.method({ cancel: 'job', ...(s.onCancel === 'resolves' ? {} : { what: s.what }) }, async ({ signal }, req: unknown, ...callbacks: unknown[]) =>
      s.run(studyContext(session.need(), { signal, loadSae: session.needSae, modelB: session.modelB() }), req, ...callbacks));
  }
  return methods as StudyApi;
}

/**
 * The inference worker: the engine behind Comlink, every method through one wrapper (Jobs.method:
 * cancel registration, quiet callbacks, transferables). Errors are rethrown with readable messages.
 */
const api: InferenceApi = {
  ...studyMethods(),

  sizeLadder: jobs.method({}, async (_run, source: ModelSource, backend: BackendChoice, options: { contextLength?: number; memoryBudgetBytes?: number } = {}) => {
    const files = await filesFor(source);
    const own = session.engine ? null : await selectBackend(backend, {});
    try {
      return await sizeLadder(files, deviceLimits(session.engine?.backend ?? own!, options.memoryBudgetBytes), options.contextLength);
    } finally {
      own?.dispose();
    }
  }),

  load: jobs.method({ cancel: 'download' }, async ({ signal }, source: ModelSource, backend: BackendChoice, onProgress?: (p: LoadProgress) => void, options: LoadOptions = {}) =>
    loadBeside('A', source, backend, options, signal, async ({ be, files, limits, estimate: est }) => {
      // The new model is built beside the loaded one when both fit the memory budget, and the old one
      // is released only once the new one is ready: a load that fails part-way (a truncated
      // safetensors file, a NaN in a weight) leaves the previous model loaded and usable. When they
      // do not fit together, the old model is released first to make room (and the error says so).
      const estimate = est?.totalBytes ?? null;
      const budget = limits?.memoryBudget ?? deviceLimits(be, options.memoryBudgetBytes).memoryBudget;
      const keepOld = session.engine !== null && estimate !== null && estimate + (session.estimateA?.totalBytes ?? 0) + (session.estimateB?.totalBytes ?? 0) <= budget;
      const released = session.engine !== null && !keepOld;
      if (released) session.unloadModel();
      // A quantised load's logit error is measured on demand (measureLogitError below), so the load costs one model's compute.
      const measureLogitError = limits && (options.weightDtype === 'q8_0' || options.weightDtype === 'q4_0') && !(await float32ProbeFits(files, limits)) ? false : 'on-demand';
      let engine: Engine;
      try {
        engine = await Engine.load(files, be, onProgress, { weightDtype: options.weightDtype, contextLength: options.contextLength, measureLogitError, warmUp: true });
      } catch (e) {
        if (released && e instanceof Error) e.message += ' (the previous model was released first to make room for this one, so no model is loaded)';
        throw e;
      }
      session.unloadModel();
      session.engine = engine;
      session.estimateA = est;
      engine.onDeviceLost((reason) => { if (session.deviceLostCallback) quiet(session.deviceLostCallback)(reason); });
      return engine;
    })),

  loadModelB: jobs.method({ cancel: 'download' }, async ({ signal }, source: ModelSource, backend: BackendChoice, onProgress?: (p: LoadProgress) => void, options: LoadOptions = {}) =>
    loadBeside('B', source, backend, options, signal, async ({ be, files, estimate }) => {
      session.unloadModelB();
      const engine = await Engine.load(files, be, onProgress, { weightDtype: options.weightDtype, contextLength: options.contextLength, measureLogitError: false, warmUp: true });
      session.engineB = engine;
      session.estimateB = estimate;
      return engine;
    })),

  unloadModelB: jobs.method({}, async () => session.unloadModelB()),

  modelBInfo: jobs.method({}, async () => session.engineB?.info() ?? null),

  measureLogitError: jobs.method({}, async () => session.need().logitErrorVsF32()),

  tokenize: jobs.method({}, async (_, p: PromptInput) => {
    const e = session.need();
    const ids = e.encodePrompt(p, { anyLength: true });
    const tooLong = e.promptTooLong(ids.length);
    return { ids, tokens: e.tokenStrings(ids), ...(tooLong ? { tooLong } : {}) };
  }),

  resolveFuture: jobs.method({}, async (_, p: PromptInput, f: FutureInput, name?: 'good' | 'bad') => {
    const e = session.need();
    return e.resolveFuture(e.encodePrompt(p, { anyLength: true }), f, p, name);
  }),

  tokenStrings: jobs.method({}, async (_, ids: number[]) => session.displayStrings(session.need(), ids)),

  analyse: jobs.method({}, async (_, req: AnalyseRequest & SpecRequest) => {
    const e = session.need();
    // positions resolve against the run the analysis makes: the prompt at its decision point
    const resolved = await session.resolveSpecs(e, req, undefined, atDecisionPoint(e, req, req.good, req.bad));
    const a = await e.analyse(resolved);
    // the run the analysis made (pattern, activations re-run it): the prompt at its decision point (Engine.decisionPoint)
    session.lastAnalysed = a.sharedPrefix ? { ...resolved, forcedIds: a.sharedPrefix.ids } : resolved;
    return a;
  }),

  pattern: jobs.method({}, async (_, layer: number, head: number) => {
    const e = session.need();
    const last = session.lastAnalysed;
    if (!last) throw new Error('analyse a prompt first');
    const ids = e.encodePrompt(last);
    const name = `blocks.${layer}.attn.hook_pattern`;
    const { captured } = await e.run(ids, { capture: [name], interventions: last.interventions });
    const T = ids.length;
    return captured.get(name)!.slice(head * T * T, (head + 1) * T * T);
  }),

  activations: jobs.method({}, async (_, hooks: string[]) => {
    const e = session.need();
    const last = session.lastAnalysed;
    if (!last) throw new Error('analyse a prompt first');
    const ids = e.encodePrompt(last);
    const { captured } = await e.run(ids, { capture: hooks, interventions: last.interventions });
    return hooks.map((hook) => {
      const data = captured.get(hook)!;
      return { hook, shape: [ids.length, data.length / ids.length] as [number, number], data };
    });
  }),

  lensTop: jobs.method({}, async (_, handle: number, layer: number, position: number, k?: number) => {
    const e = session.need();
    const top = await e.lensTop(handle, layer, position, k);
    const ids = Array.from(top.ids);
    return { ids, logProbs: Array.from(top.logProbs), tokens: session.displayStrings(e, ids) };
  }),

  generate: jobs.method({ cancel: 'job' }, async ({ signal }, req: GenerateRequest & SpecRequest, onToken?: (e: TokenEvent) => void) => {
    const e = session.need();
    return e.generate(await session.resolveSpecs(e, req, req.maxNewTokens), onToken, signal);
  }),

  steeringVector: jobs.method({}, async (_, req: VectorRequest, onProgress?: (p: Progress) => void) => {
    const e = session.need();
    const head = req.head !== undefined ? { head: req.head } : {};
    let sv: SteeringVector;
    if (req.method === 'actadd') {
      if (req.positive.length !== 1 || req.negative.length !== 1) throw new Error(`ActAdd takes one positive and one negative text (got ${req.positive.length} and ${req.negative.length}); use CAA for sets`);
      if (typeof req.position === 'object') throw new Error('ActAdd reads the last token or the mean over aligned positions, not a marker');
      sv = await actAdd(e, { positive: req.positive[0], negative: req.negative[0], hook: req.hook, position: req.position === 'mean' ? 'mean' : 'last', ...head });
      onProgress?.({ done: 2, total: 2 });
    } else {
      if (req.position === 'mean') throw new Error('CAA reads the last token or a marked answer token, not the mean');
      sv = await caaVector(e, { positive: req.positive, negative: req.negative, hook: req.hook, position: req.position ?? 'last', ...head, onProgress });
    }
    return libraryVector(sv);
  }),

  importVector: jobs.method({}, async (_, name: string, bytes: Uint8Array) => {
    const e = session.need();
    const iv = readVectorFile(name, bytes);
    assertImportFits(e, name, iv.vector, iv.hook);
    const out: LibraryVector = {
      vector: iv.vector, dModel: iv.vector.length, hook: iv.hook ?? null, model: iv.model ?? null,
      provenance: importedProvenance(iv.provenance, iv.method), createdAt: new Date().toISOString(), file: name,
    };
    return out;
  }),

  exportVector: jobs.method({}, async (_, format: VectorFormat, v: LibraryVector) =>
    writeVectorFile(format, { vector: v.vector, hook: v.hook ?? '', dModel: v.dModel, modelId: v.model ?? '', provenance: v.provenance })),

  branchStart: jobs.method({ cancel: 'job' }, async ({ signal }, req: ExploreRequest & SpecRequest, draw: DrawSettings, onToken?: (e: BranchTokenEvent) => void) => {
    const e = session.need();
    const { specs, specLabels, ...rest } = req;
    const interventions = await session.specInterventions(e, rest, { specs, specLabels }, req.maxNewTokens);
    const x = await BranchExplorer.start(e, rest, draw, interventions, e.label, onToken, signal);
    session.explorer = { x, req: rest };
    return x.tree;
  }),

  branchFork: jobs.method({ cancel: 'job' }, async ({ signal }, req: ForkRequest, draw: DrawSettings, onToken?: (e: BranchTokenEvent) => void) => {
    const e = session.need();
    const b = session.needTree();
    const interventions = await session.specInterventions(e, b.req, req, b.x.tree.maxNewTokens);
    await b.x.fork(req.from, req.position, req.tokenId, draw, interventions, onToken, signal);
    return b.x.tree;
  }),

  branchLens: jobs.method({}, async (_, node: number, position: number, alternatives: number[]) => {
    session.need();
    return session.needTree().x.lensMargins(node, position, alternatives);
  }),

  branchRestore: jobs.method({}, async (_, req: RestoreRequest) => {
    const e = session.need();
    const t = validateTree(req.tree);
    const prompt = treePrompt(t);
    session.explorer = { x: BranchExplorer.restore(e, t, await session.specInterventions(e, prompt, req, t.maxNewTokens)), req: prompt };
    return t;
  }),

  forkPoints: jobs.method({ cancel: 'job' }, async ({ signal }, req: ForkPointsRequest & SpecRequest, onProgress?: (p: ForkProgress) => void) => {
    const e = session.need();
    const b = session.needTree();
    const { specs, specLabels, ...points } = req;
    const interventions = await session.specInterventions(e, b.req, { specs, specLabels }, b.x.tree.maxNewTokens);
    return forkPoints(b.x, points, interventions, onProgress, signal);
  }),

  loadSae: jobs.method({}, async (_, source: SaeSource, hook?: string): Promise<SaeInfo> => {
    const e = session.need();
    let files, path = '';
    if (source.kind === 'hub') {
      files = await filesFor({ kind: 'hub', repo: source.repo, revision: source.revision, endpoint: source.endpoint, token: source.token });
      path = source.path;
    } else {
      files = await filesFor(source);
      // picked files are keyed by base name: a SAELens folder reads from the root, a lone .npz by its name
      const npz = source.kind === 'files' && !source.files.some((f) => f.path.endsWith('sae_weights.safetensors')) ? source.files.find((f) => /\.npz$/i.test(f.path)) : undefined;
      if (npz) path = npz.path.split('/').slice(-1)[0];
    }
    const inUse = e.backend instanceof WebGpuBackend ? e.backend.memoryStats().bytes : 0;
    const limits = deviceLimits(e.backend);
    await assertSaeFits(files, path, limits, inUse);
    const sae = new Sae(e.backend, await readSae(files, path, { hook, maxBytes: limits.memoryBudget - inUse }), e.spec);
    const id = `sae${++session.saeCount}`;
    session.saes.set(id, sae);
    return { id, label: sae.label, cfg: sae.cfg };
  }),

  unloadSae: jobs.method({}, async (_, id: string) => {
    session.saes.get(id)?.release();
    session.saes.delete(id);
  }),

  analyseSae: jobs.method({}, async (_, id: string, req: SaeAnalysisRequest) => analyseSae(session.need(), session.needSae(id), req)),

  saeFeature: jobs.method({}, async (_, id: string, feature: number, vectors: { name: string; vector: Float32Array }[]) =>
    featureInfo(session.need(), session.needSae(id), feature, vectors)),

  cancel: jobs.method({}, async () => jobs.cancel()),

  cachedModels: jobs.method({}, () => listCachedModels()),

  deleteCachedModel: jobs.method({}, (_, repo: string, revision: string, endpoint?: string) => deleteCachedModel(repo, revision, endpoint)),

  status: jobs.method({}, async () => ({ loaded: session.engine !== null, deviceLost: session.engine?.deviceLost ?? null })),

  onDeviceLost: jobs.method({}, async (_, callback: (reason: string) => void) => {
    session.deviceLostCallback = callback;
  }),
};

Comlink.expose(api);
