/// <reference lib="webworker" />
import { float32ProbeFits } from './engine/model/quant_error';
import * as Comlink from 'comlink';
import { Engine } from './engine/engine';
import { selectBackend } from './engine/backend/select';
import { deleteCachedModel, listCachedModels } from './engine/io/cache';
import { deviceLimits, filesFor } from './sources';
import { CancelledError } from './engine/io/download';
import { parseSpec } from './engine/steering/spec';
import { resolveInterventions } from './engine/studies/resolve_interventions';
import { doseResponse } from './engine/studies/sweep';
import { BranchExplorer } from './engine/studies/branching/explorer';
import { forkPoints } from './engine/studies/branching/forks';
import { validateTree } from './engine/studies/branching/tree';
import { runBatch } from './engine/studies/batch/batch';
import type { Intervention } from './engine/model/intervention';
import { actAdd, caaVector } from './engine/studies/vectors';
import { type SteeringVector, type VectorProvenance } from './engine/steering/vector';
import { assertVectorFits, readVectorFile, writeVectorFile, type VectorFormat } from './engine/steering/vector_io';
import { hookWidth } from './engine/model/hook_width';
import { probeLayers } from './engine/studies/probe';
import { interventionWindow } from './engine/studies/window';
import type { BatchJob, BatchProgress, BatchRow, BranchTokenEvent, DrawSettings, ExploreRequest, ForkPointsRequest, ForkProgress, ProbeProgress, ProbeRequest, WindowJob, WindowProgress } from './protocol';
import { patchingGrid } from './engine/studies/patching';
import { decisionReport } from './engine/studies/report';
import type { AnalyseRequest, BackendChoice, FutureInput, GenerateRequest, InferenceApi, LibraryVector, LoadOptions, LoadProgress, ModelSource, PatchingProgress, PatchingRequest, PromptInput, ReportJob, ReportProgress, SpecRequest, SweepProgress, SweepRequest, TokenEvent, VectorRequest } from './protocol';
import { analyseSae, featureInfo } from './engine/studies/sae_features';
import { assertSaeFits } from './engine/sae/estimate';
import { readSae } from './engine/sae/files';
import { Sae } from './engine/sae/sae';
import { WebGpuBackend } from './engine/backend/webgpu';
import type { SaeAnalysisRequest, SaeInfo, SaeSource } from './protocol';

let engine: Engine | null = null;
let lastAnalysed: AnalyseRequest | null = null;
/** The branch tree forks continue from (with the interventions its steered runs used). */
let explorer: { x: BranchExplorer; req: PromptInput } | null = null;
let abort: AbortController | null = null;
let loading: AbortController | null = null;
let deviceLostCallback: ((reason: string) => void) | null = null;
/** Loaded SAEs by id; they live on the engine's backend and go with it. */
const saes = new Map<string, Sae>();
let saeCount = 0;

function needSae(id: string): Sae {
  const s = saes.get(id);
  if (!s) throw new Error(`SAE "${id}" is not loaded (load it again in the SAE view)`);
  return s;
}

function need(): Engine {
  if (!engine) throw new Error('no model is loaded: pick one first');
  const lost = engine.deviceLost;
  if (lost !== null) throw new Error(`the GPU device was lost (${lost}): load the model again to continue on a fresh device`);
  return engine;
}

/**
 * The request with its specs resolved into engine interventions (after the request's own), for a
 * run of this prompt and, when generating, this many new tokens.
 */
async function resolveSpecs<R extends PromptInput & SpecRequest & { interventions?: AnalyseRequest['interventions'] }>(e: Engine, req: R, maxNewTokens?: number): Promise<R> {
  const { specs, specLabels, ...rest } = req;
  if (!specs?.length) return rest as R;
  const label = (i: number) => specLabels?.[i] ?? `intervention ${i + 1}`;
  const parsed = specs.map((s, i) => parseSpec(s, label(i)));
  const run = { nPrompt: e.encodePrompt(req).length, chatTemplate: req.chatTemplate, ...(maxNewTokens !== undefined ? { maxNewTokens } : {}) };
  const resolved = await resolveInterventions(e, parsed, run, { label, loadSae: needSae });
  return { ...rest, interventions: [...(req.interventions ?? []), ...resolved] } as R;
}

/** Each id's display string on its own, after the last analysed prompt's first token (so " Tom" keeps its space). */
function displayStrings(e: Engine, ids: number[]): string[] {
  const prefix = lastAnalysed ? e.encodePrompt(lastAnalysed).slice(0, 1) : [];
  return ids.map((id) => e.tokenStrings([id], prefix)[0]);
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

/** A new cancellable job: cancels the one running and returns its controller. */
function newJob(): AbortController {
  abort?.abort();
  abort = new AbortController();
  return abort;
}

/** The interventions the specs resolve to for a run of this prompt (and this many new tokens). */
async function specInterventions(e: Engine, p: PromptInput, specs: SpecRequest, maxNewTokens?: number): Promise<Intervention[]> {
  const interventions: Intervention[] = [];
  return (await resolveSpecs(e, { prompt: p.prompt, chatTemplate: p.chatTemplate, ...specs, interventions }, maxNewTokens)).interventions ?? [];
}

function needTree(): { x: BranchExplorer; req: PromptInput } {
  if (!explorer) throw new Error('no branch tree: generate a trunk in the Branches view first');
  return explorer;
}

/** A UI callback whose failure (a page that went away) must not stop the job. */
function quiet<A>(f?: (a: A) => unknown): ((a: A) => void) | undefined {
  return f ? (a) => { void Promise.resolve(f(a)).catch(() => undefined); } : undefined;
}

/**
 * Runs a job that cancel() can stop (newJob: it cancels the one before): an abort becomes a
 * CancelledError naming `what`.
 */
async function cancellableJob<T>(what: string, body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctrl = newJob();
  try {
    return await body(ctrl.signal);
  } catch (err) {
    if (ctrl.signal.aborted) throw new CancelledError(what);
    throw err;
  }
}

/** The inference worker: the engine behind Comlink. Errors are rethrown with readable messages. */
const api: InferenceApi = {
  async load(source: ModelSource, backend: BackendChoice, onProgress?: (p: LoadProgress) => void, options: LoadOptions = {}) {
    abort?.abort();
    loading?.abort();
    const ctrl = new AbortController();
    loading = ctrl;
    const be = await selectBackend(backend, { threads: options.threads });
    try {
      // The source is resolved (Hub listing, config, safetensors headers) and its fit checked before
      // the loaded model is freed: a typo in a repo id, a gated repo or a model too large for the
      // device leaves the current model (and its SAEs) loaded.
      const limits = options.checkFit === false ? undefined : deviceLimits(be, options.memoryBudgetBytes);
      const files = await filesFor(source, { limits, signal: ctrl.signal, weightDtype: options.weightDtype, contextLength: options.contextLength });
      for (const s of saes.values()) s.release();
      saes.clear();
      engine?.dispose();
      engine = null;
      lastAnalysed = null;
      explorer = null;
      // A quantised load's logit error is measured on demand (measureLogitError below), so the load costs one model's compute.
      const measureLogitError = limits && (options.weightDtype === 'q8_0' || options.weightDtype === 'q4_0') && !(await float32ProbeFits(files, limits)) ? false : 'on-demand';
      engine = await Engine.load(files, be, onProgress, { weightDtype: options.weightDtype, contextLength: options.contextLength, measureLogitError, warmUp: true });
      // a proxy whose page is gone rejects: nothing is left to tell
      engine.onDeviceLost((reason) => { void Promise.resolve(deviceLostCallback?.(reason)).catch(() => undefined); });
    } catch (e) {
      be.dispose();
      throw e;
    } finally {
      if (loading === ctrl) loading = null;
    }
    return engine.info();
  },

  async measureLogitError() {
    return need().logitErrorVsF32();
  },

  async tokenize(p: PromptInput) {
    const e = need();
    const ids = e.encodePrompt(p, { anyLength: true });
    const tooLong = e.promptTooLong(ids.length);
    return { ids, tokens: e.tokenStrings(ids), ...(tooLong ? { tooLong } : {}) };
  },

  async resolveFuture(p: PromptInput, f: FutureInput, name?: 'good' | 'bad') {
    const e = need();
    return e.resolveFuture(e.encodePrompt(p, { anyLength: true }), f, p, name);
  },

  async tokenStrings(ids: number[]) {
    return displayStrings(need(), ids);
  },

  async analyse(req: AnalyseRequest & SpecRequest) {
    const e = need();
    const resolved = await resolveSpecs(e, req);
    const a = await e.analyse(resolved);
    lastAnalysed = resolved;
    return Comlink.transfer(a, [a.lensMargin.buffer, a.finalMargin.buffer, a.residNorms.buffer, a.sinks.alpha.buffer, a.sinks.alpha0.buffer]);
  },

  async pattern(layer: number, head: number) {
    const e = need();
    if (!lastAnalysed) throw new Error('analyse a prompt first');
    const ids = e.encodePrompt(lastAnalysed);
    const name = `blocks.${layer}.attn.hook_pattern`;
    const { captured } = await e.run(ids, { capture: [name], interventions: lastAnalysed.interventions });
    const T = ids.length;
    const out = captured.get(name)!.slice(head * T * T, (head + 1) * T * T);
    return Comlink.transfer(out, [out.buffer]);
  },

  async activations(hooks: string[]) {
    const e = need();
    if (!lastAnalysed) throw new Error('analyse a prompt first');
    const ids = e.encodePrompt(lastAnalysed);
    const { captured } = await e.run(ids, { capture: hooks, interventions: lastAnalysed.interventions });
    const out = hooks.map((hook) => {
      const data = captured.get(hook)!;
      return { hook, shape: [ids.length, data.length / ids.length] as [number, number], data };
    });
    return Comlink.transfer(out, out.map((o) => o.data.buffer));
  },

  async lensTop(handle: number, layer: number, position: number, k?: number) {
    const e = need();
    const top = await e.lensTop(handle, layer, position, k);
    const ids = Array.from(top.ids);
    return { ids, logProbs: Array.from(top.logProbs), tokens: displayStrings(e, ids) };
  },

  async generate(req: GenerateRequest & SpecRequest, onToken?: (e: TokenEvent) => void) {
    abort?.abort();
    const ctrl = new AbortController();
    abort = ctrl;
    const e = need();
    return e.generate(await resolveSpecs(e, req, req.maxNewTokens), onToken, ctrl.signal);
  },

  async steeringVector(req: VectorRequest, onProgress?: (done: number, total: number) => void) {
    const e = need();
    const head = req.head !== undefined ? { head: req.head } : {};
    let sv: SteeringVector;
    if (req.method === 'actadd') {
      if (req.positive.length !== 1 || req.negative.length !== 1) throw new Error(`ActAdd takes one positive and one negative text (got ${req.positive.length} and ${req.negative.length}); use CAA for sets`);
      if (typeof req.position === 'object') throw new Error('ActAdd reads the last token or the mean over aligned positions, not a marker');
      sv = await actAdd(e, { positive: req.positive[0], negative: req.negative[0], hook: req.hook, position: req.position === 'mean' ? 'mean' : 'last', ...head });
      onProgress?.(2, 2);
    } else {
      if (req.position === 'mean') throw new Error('CAA reads the last token or a marked answer token, not the mean');
      sv = await caaVector(e, { positive: req.positive, negative: req.negative, hook: req.hook, position: req.position ?? 'last', ...head, onProgress: (done, total) => { void Promise.resolve(onProgress?.(done, total)).catch(() => undefined); } });
    }
    const out = libraryVector(sv);
    return Comlink.transfer(out, [out.vector.buffer]);
  },

  async importVector(name: string, bytes: Uint8Array) {
    const e = need();
    const iv = readVectorFile(name, bytes);
    assertImportFits(e, name, iv.vector, iv.hook);
    const out: LibraryVector = {
      vector: iv.vector, dModel: iv.vector.length, hook: iv.hook ?? null, model: iv.model ?? null,
      provenance: importedProvenance(iv.provenance, iv.method), createdAt: new Date().toISOString(), file: name,
    };
    return Comlink.transfer(out, [out.vector.buffer]);
  },

  async exportVector(format: VectorFormat, v: LibraryVector) {
    const bytes = writeVectorFile(format, { vector: v.vector, hook: v.hook ?? '', dModel: v.dModel, modelId: v.model ?? '', provenance: v.provenance });
    return Comlink.transfer(bytes, [bytes.buffer]);
  },

  async sweep(req: SweepRequest, onProgress?: (p: SweepProgress) => void) {
    return cancellableJob('the dose–response sweep', (signal) => doseResponse(need(), req, quiet(onProgress), signal));
  },

  async probe(req: ProbeRequest, onProgress?: (p: ProbeProgress) => void) {
    const r = await cancellableJob('the probes', (signal) => probeLayers(need(), req, quiet(onProgress), signal));
    return Comlink.transfer(r, r.directions.map((d) => d.buffer));
  },

  async interventionWindow(req: WindowJob, onProgress?: (p: WindowProgress) => void) {
    return cancellableJob('the intervention window', async (signal) => {
      const e = need();
      const resolved = await resolveSpecs(e, { ...req, interventions: [] }, req.maxNewTokens);
      return interventionWindow(e, resolved, quiet(onProgress), signal);
    });
  },

  async branchStart(req: ExploreRequest & SpecRequest, draw: DrawSettings, onToken?: (e: BranchTokenEvent) => void) {
    const ctrl = newJob();
    const e = need();
    const { specs, specLabels, ...rest } = req;
    const interventions = await specInterventions(e, rest, { specs, specLabels }, req.maxNewTokens);
    const x = await BranchExplorer.start(e, rest, draw, interventions, e.label, quiet(onToken), ctrl.signal);
    explorer = { x, req: rest };
    return x.tree;
  },

  async branchFork(from: number, position: number, tokenId: number, draw: DrawSettings, specs: SpecRequest = {}, onToken?: (e: BranchTokenEvent) => void) {
    const ctrl = newJob();
    const e = need();
    const b = needTree();
    const interventions = await specInterventions(e, b.req, specs, b.x.tree.maxNewTokens);
    await b.x.fork(from, position, tokenId, draw, interventions, quiet(onToken), ctrl.signal);
    return b.x.tree;
  },

  async branchLens(node: number, position: number, alternatives: number[]) {
    need();
    return needTree().x.lensMargins(node, position, alternatives);
  },

  async branchRestore(tree: unknown, specs: SpecRequest = {}) {
    const e = need();
    const t = validateTree(tree);
    const req = { prompt: t.prompt, chatTemplate: t.chatTemplate };
    explorer = { x: BranchExplorer.restore(e, t, await specInterventions(e, req, specs, t.maxNewTokens)), req };
    return t;
  },

  async forkPoints(req: ForkPointsRequest, specs: SpecRequest = {}, onProgress?: (p: ForkProgress) => void) {
    const ctrl = newJob();
    const e = need();
    const b = needTree();
    const interventions = await specInterventions(e, b.req, specs, b.x.tree.maxNewTokens);
    return forkPoints(b.x, req, interventions, quiet(onProgress), ctrl.signal);
  },

  async batch(req: BatchJob & SpecRequest, onRow?: (r: BatchRow) => void, onProgress?: (p: BatchProgress) => void) {
    const ctrl = newJob();
    const e = need();
    const { specs, specLabels, ...job } = req;
    const interventions = specs?.length ? (p: PromptInput) => specInterventions(e, p, { specs, specLabels }) : undefined;
    return runBatch(e, { ...job, interventions }, quiet(onRow), quiet(onProgress), ctrl.signal);
  },

  async patching(req: PatchingRequest, onProgress?: (p: PatchingProgress) => void) {
    const ctrl = newJob();
    try {
      const r = await patchingGrid(need(), req, quiet(onProgress), ctrl.signal);
      return Comlink.transfer(r, [r.patchedMargin.buffer, r.recovery.buffer, r.layerRecovery.buffer]);
    } catch (err) {
      if (ctrl.signal.aborted) throw new CancelledError('the patching grid');
      throw err;
    }
  },

  async report(req: ReportJob, onProgress?: (p: ReportProgress) => void) {
    return cancellableJob('the decision-point report', (signal) => {
      const e = need();
      const { window: w, ...rest } = req;
      const window = w && { ...w, interventions: (p: PromptInput) => specInterventions(e, p, { specs: w.specs, specLabels: w.specLabels }, w.maxNewTokens) };
      return decisionReport(e, { ...rest, window }, quiet(onProgress), signal);
    });
  },

  async loadSae(source: SaeSource, hook?: string): Promise<SaeInfo> {
    const e = need();
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
    const id = `sae${++saeCount}`;
    saes.set(id, sae);
    return { id, label: sae.label, cfg: sae.cfg };
  },

  async unloadSae(id: string) {
    saes.get(id)?.release();
    saes.delete(id);
  },

  async analyseSae(id: string, req: SaeAnalysisRequest) {
    const r = await analyseSae(need(), needSae(id), req);
    return Comlink.transfer(r, [r.topIndices.buffer, r.topValues.buffer, r.l0.buffer, r.mse.buffer, r.explainedVariancePerToken.buffer, r.pinnedActs.buffer, r.maxPositions.buffer, r.maxValues.buffer]);
  },

  async saeFeature(id: string, feature: number, vectors: { name: string; vector: Float32Array }[]) {
    return featureInfo(need(), needSae(id), feature, vectors);
  },

  cancel() {
    abort?.abort();
    loading?.abort();
  },

  cachedModels: () => listCachedModels(),

  deleteCachedModel: (repo: string, revision: string, endpoint?: string) => deleteCachedModel(repo, revision, endpoint),

  async status() {
    return { loaded: engine !== null, deviceLost: engine?.deviceLost ?? null };
  },

  onDeviceLost(callback: (reason: string) => void) {
    deviceLostCallback = callback;
  },
};

Comlink.expose(api);
