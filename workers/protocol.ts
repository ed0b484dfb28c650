/**
 * The typed contract between the UI and the inference worker (Comlink). The UI imports these
 * types only; the worker implements `InferenceApi`. Progress and token streams are callbacks
 * passed through `Comlink.proxy`; large arrays come back as transferables. Every request that takes
 * interventions carries them as its `specs` field (SpecRequest); every study reports `Progress`
 * (engine/progress.ts), or a shape extending it. The studies' methods (sweep, probe, patching, …)
 * are not written here: StudyApi reads them off the studies' table (engine/studies/registry.ts).
 */
import type { SizeLadder } from './engine/model/size_ladder';
import type { Analysis, AnalyseRequest, Generation, GenerateRequest, ModelInfo, TokenEvent } from './engine/api';
import type { FutureInput, PromptInput, ResolvedFuture } from './engine/prompt';
import type { LoadProgress, WeightDtype } from './engine/model/load';
import type { CachedModel } from './engine/io/cache';
import type { InterventionSpec } from './engine/steering/spec';
import type { SweepRequest, SweepResult } from './engine/studies/sweep';
import type { Progress } from './engine/progress';
import type { VectorFormat } from './engine/steering/vector_io';
import type { BranchTokenEvent, ExploreRequest, LensMargins } from './engine/studies/branching/explorer';
import type { ForkPoint, ForkPointsRequest, ForkPointsResult, ForkProgress } from './engine/studies/branching/forks';
import type { BranchTree, DrawSettings, TopTokens, TreeNode } from './engine/studies/branching/tree';
import type { BatchResult, BatchRow } from './engine/studies/batch/batch';
import type { BatchMetric } from './engine/studies/batch/metrics';
import type { StudyTemplate } from './engine/studies/batch/template';
import type { ValuesTable } from './engine/studies/batch/values';
import type { PatchingRequest, PatchingResult } from './engine/studies/patching';
import type { ReportProgress, ReportRequest, ReportResult } from './engine/studies/report';
import type { VectorProvenance } from './engine/steering/vector';
import type { ProbeRequest, ProbeResult } from './engine/studies/probe';
import type { WindowContinuation, WindowResult, WindowScore } from './engine/studies/window';
import type { BatchJob, ProgressStudy, ReportJob, StudyApi, StudyCallbacks, StudyName, StudyProgress, StudyRequest, StudyResult, WindowJob } from './engine/studies/registry';
import type { SpecRequest } from './engine/studies/resolve_interventions';
import type { SaeAnalysis, SaeAnalysisRequest, SaeFeatureInfo } from './engine/studies/sae_features';
import type { SaeConfig } from './engine/sae/config';
import type { LogitError } from './engine/model/quant_error';

export type { Analysis, AnalyseRequest, FutureInput, Generation, GenerateRequest, ModelInfo, PromptInput, ResolvedFuture, TokenEvent, LoadProgress, WeightDtype, LogitError };
export type { SinkStats } from './engine/analysis/sinks';
export type { SharedPrefix } from './engine/decision_point';
export type { Intervention, PositionSelector, StepWindow } from './engine/model/intervention';
export type { RowOp } from './engine/backend/backend';
export type { CachedModel } from './engine/io/cache';
export type { CatalogEntry } from './engine/io/catalog';
export type { Progress };
export type { BatchJob, ProgressStudy, ReportJob, SpecRequest, StudyApi, StudyCallbacks, StudyName, StudyProgress, StudyRequest, StudyResult, WindowJob };
export type { InterventionSpec, SweepRequest, SweepResult, VectorFormat, VectorProvenance };
export type { AblateMode, InterventionType } from './engine/steering/spec';
export type { SaeAnalysis, SaeAnalysisRequest, SaeConfig, SaeFeatureInfo };

/** Where an SAE comes from (a SAELens folder, a Gemma Scope params.npz, or a folder holding one). */
export type SaeSource =
  /** Files the user picked: a SAELens folder (cfg.json, sae_weights.safetensors) or a params.npz. */
  | { kind: 'files'; label: string; files: { path: string; file: Blob }[] }
  /** A folder served over HTTP (a mirror prefix). */
  | { kind: 'url'; url: string; label?: string }
  /** A folder inside a Hub repo, e.g. repo "google/gemma-scope-2b-pt-res", path "layer_12/width_16k/average_l0_82". */
  | { kind: 'hub'; repo: string; path: string; revision?: string; endpoint?: string; token?: string };

/** A loaded SAE: the id specs and requests name it by ("vector": {"sae": id, …}, "sae_clamp"), and its configuration. */
export interface SaeInfo {
  id: string;
  label: string;
  cfg: SaeConfig;
}

export type { BranchTokenEvent, ExploreRequest, LensMargins, ForkPoint, ForkPointsRequest, ForkPointsResult, ForkProgress, BranchTree, DrawSettings, TopTokens, TreeNode };
export type { BatchResult, BatchRow, BatchMetric, StudyTemplate, ValuesTable };

export type { PatchingRequest, PatchingResult, ReportProgress, ReportRequest, ReportResult };
export type { ReportDifference, ReportPairResult } from './engine/studies/report_pair';
export type { TransferRequest, TransferResult } from './engine/studies/transfer_job';
export type { ReportPrompt, ReportLabelledSet } from './engine/studies/report';
export type { PatchDirection, PatchHook, PatchMetric } from './engine/studies/patching';
export type { CompareJob, ComparisonResult, WeightDiffRows } from './engine/studies/compare_job';
export type { CrossPatchResult } from './engine/studies/cross_patch';

export type { ProbeRequest, ProbeResult, WindowContinuation, WindowResult, WindowScore };

/** Where a model comes from. */
export type ModelSource =
  /** A folder served over HTTP: the dev server's /models/<name>/ or a self-hosted mirror prefix. */
  /** files: the folder's files and sizes when known (a bundled model's manifest): nothing else is asked for. */
  | { kind: 'url'; url: string; label?: string; files?: { path: string; bytes: number }[] }
  /** A Hugging Face Hub repo (resolve/{revision}/{file} URL layout); token only for gated repos. */
  | { kind: 'hub'; repo: string; revision?: string; endpoint?: string; token?: string }
  /** Files the user picked or dropped (paths relative to the model folder). */
  | { kind: 'files'; label: string; files: { path: string; file: Blob }[] };

export type BackendChoice = 'auto' | 'webgpu' | 'cpu';

/** How a load checks that the model fits before downloading its weights ('hub' and 'url' sources). */
export interface LoadOptions {
  /** Memory the model may use, in bytes (default: navigator.deviceMemory GiB, else 4 GiB). */
  memoryBudgetBytes?: number;
  /** false = skip the estimate and load anyway (a "load anyway" button after a refusal). */
  checkFit?: boolean;
  /**
   * 'f16' stores the weight matrices as binary16 on WebGPU (half the memory; norms and biases stay
   * float32; logits move by up to ~5e-2); the CPU backend rounds them to binary16 for parity.
   * 'q8_0' / 'q4_0' quantise the linear weights into ggml blocks on either backend (8.5 / 4.5 bits
   * per weight) and ModelInfo.weights reports the measured logit error against float32.
   * Default 'f32'. The pre-download estimate counts the stored bytes of each choice.
   */
  weightDtype?: WeightDtype;
  /**
   * KV-cache positions to allocate: the longest prompt plus generation the session runs (default
   * 4096, capped at the model's max_position_embeddings; ModelInfo.contextLength reports it). The
   * pre-download estimate sizes the KV cache for it.
   */
  contextLength?: number;
  /**
   * CPU backend: threads for the matrix products (default: the logical cores, at most 8, where the
   * page is cross-origin isolated; else 1). Results are bit-identical for any count.
   */
  threads?: number;
}

/** What the worker holds now; poll it after an error, or use onDeviceLost. */
export interface WorkerStatus {
  /** A model is loaded (it may still be unusable: see deviceLost). */
  loaded: boolean;
  /**
   * Why the GPU device was lost, or null. While set, every model call throws "the GPU device was
   * lost …": call load() again, which creates a fresh device (or falls back to the CPU with 'auto').
   */
  deviceLost: string | null;
}

/** A fork of the branch tree: node `from` forced at absolute `position` to token `tokenId`, under the specs (when draw.steered). */
export interface ForkRequest extends SpecRequest {
  from: number;
  position: number;
  tokenId: number;
}

/** An exported branch tree to re-open (validated in the worker), with the specs its steered nodes ran under. */
export interface RestoreRequest extends SpecRequest {
  tree: unknown;
}

/** How to build a steering vector from the model's own activations (engine/studies/vectors.ts). */
export interface VectorRequest {
  /** 'caa': difference of means over the sets (Rimsky et al., arXiv 2312.06681); 'actadd': one pair (Turner et al., arXiv 2308.10248). */
  method: 'caa' | 'actadd';
  /** ActAdd takes exactly one text on each side. */
  positive: string[];
  negative: string[];
  hook: string;
  /** Token read: 'last' (default); ActAdd also 'mean' (aligned positions); CAA also {marker} before the answer token. */
  position?: 'last' | 'mean' | { marker: string };
  /** Per-head hooks (attn.hook_q/k/v/z): one head's d_head slice. */
  head?: number;
}

/** A steering vector as the UI's library holds it: values plus where they came from. */
export interface LibraryVector {
  /** [d] float32. */
  vector: Float32Array;
  /** d: the row width of the hook it fits (d_model for residual hooks, d_head for one head). */
  dModel: number;
  /** Hook it was computed at; null when an imported file does not say. */
  hook: string | null;
  /** Label of the model it was computed on; null when an imported file does not say. */
  model: string | null;
  /** Method, token position and the contrastive texts (empty for a file that does not record them). */
  provenance: VectorProvenance;
  /** When it was built or imported (ISO 8601). */
  createdAt: string;
  /** Name of the file it was imported from. */
  file?: string;
}

/** Lens top tokens of one cell: ids [k], log-probs [k] (nats) and each id's display string. */
export interface LensTopTokens {
  ids: number[];
  logProbs: number[];
  tokens: string[];
}

/**
 * The worker's methods: one per study of the studies' table (engine/studies/registry.ts StudyApi:
 * sweep, probe, interventionWindow, patching, report, batch, compare — request, callbacks, result and docs
 * there), and these.
 */
export interface InferenceApi extends StudyApi {
  /**
   * Loads a model (replacing the current one). With 'auto', WebGPU is tried first and the CPU
   * backend is used with the reason when it is unavailable.
   * Hub and URL models are first estimated from their config and safetensors headers and refused,
   * before any weight is fetched, when they would not fit the device (the message names the limit).
   * Hub downloads are kept in Cache Storage: a second load of the same repo@revision is offline.
   * cancel() stops a download in flight (the load rejects with a "cancelled: ..." error).
   * The model loaded before (and its SAEs) is freed only once the new source is resolved and fits:
   * a load that fails there (a repo that does not exist, a refused size, a cancel) leaves it loaded
   * (status().loaded); one that fails later (a truncated weight file) leaves none.
   * @throws Error with a user-readable message; the worker stays usable.
   */
  load(source: ModelSource, backend: BackendChoice, onProgress?: (p: LoadProgress) => void, options?: LoadOptions): Promise<ModelInfo>;
  /**
   * The size ladder of `source` (model/size_ladder.ts): bytes per weight storage (float32, binary16,
   * Q8_0, Q4_0) and the KV cache for `options.contextLength` positions, each judged against the
   * loaded model's backend (else the one `backend` selects, released after) and the memory budget —
   * from config.json and the safetensors headers only; nothing is downloaded and the loaded model stays.
   * @throws Error for a source that cannot be estimated (a GGUF folder, a malformed header, an unknown model_type).
   */
  sizeLadder(source: ModelSource, backend: BackendChoice, options?: { contextLength?: number; memoryBudgetBytes?: number }): Promise<SizeLadder>;
  /**
   * Loads model B beside the loaded model A (the model comparison, the `compare` study), replacing
   * the B loaded before, from any source load() takes, on a backend of its own. The memory check
   * counts both models: a B that does not fit beside A is refused (ModelTooLargeError) with both
   * models' needs and the budget, and the B loaded before stays. Loading model A keeps B when both
   * fit (else A is refused, naming B); cancel() stops a download in flight.
   * @throws Error with a user-readable message; model A is never touched.
   */
  loadModelB(source: ModelSource, backend: BackendChoice, onProgress?: (p: LoadProgress) => void, options?: LoadOptions): Promise<ModelInfo>;
  /** Frees model B and its backend (model A stays). */
  unloadModelB(): Promise<void>;
  /** Model B's info, or null when none is loaded. */
  modelBInfo(): Promise<ModelInfo | null>;
  /**
   * The loaded quantised model's logit error against its float32 weights on the probe prompt
   * (engine/model/quant_error.ts), measured on the first call and kept (ModelInfo.weights.logitError
   * is empty until then: the load does not run the float32 model).
   * @throws Error saying why there is nothing to measure (float32 weights, GGUF, too large).
   */
  measureLogitError(): Promise<LogitError>;
  /**
   * Prompt → ids and display tokens, for the token strip: a prompt longer than the model's context
   * is tokenized all the same (the strip stays while the user shortens it), with `tooLong` the reason
   * every run refuses it ("the prompt: 1202 tokens are longer than the model's context of 512 …").
   * @throws Error for an empty prompt or a chat template that cannot be applied.
   */
  tokenize(p: PromptInput): Promise<{ ids: number[]; tokens: string[]; tooLong?: string }>;
  /**
   * One future as analyse() reads it after this prompt (text tokenized in context), without running
   * the model: the futures editor shows its tokens while the user types (also after a prompt longer
   * than the context, which the prompt's own message names).
   * @param name which future it is ('good', 'bad'), named in its errors (as analyse() names it).
   * @throws Error for a prompt that does not tokenize, an empty future or an id outside the vocabulary.
   */
  resolveFuture(p: PromptInput, f: FutureInput, name?: 'good' | 'bad'): Promise<ResolvedFuture>;
  /**
   * Display string of each token id on its own, as it reads after the last analysed prompt's first
   * token (so leading spaces show: " Tom", not "Tom").
   */
  tokenStrings(ids: number[]): Promise<string[]>;
  /**
   * Full prompt analysis (lens margins, sinks, norms), under the request's interventions and specs.
   * @throws Error for a bad prompt or future, or a spec that does not fit the model (unknown hook,
   *   vector of the wrong width, NaN, positions outside the prompt).
   */
  analyse(req: AnalyseRequest & SpecRequest): Promise<Analysis>;
  /** Attention pattern [T, T] of one head from the last analysis. */
  pattern(layer: number, head: number): Promise<Float32Array>;
  /**
   * Activations at the named hooks (TransformerLens names) for the last analysis's prompt, with its
   * interventions: each as captured, row-major, with shape [n_tokens, values per token].
   * @throws Error before any analysis, or for a hook name the model does not have.
   */
  activations(hooks: string[]): Promise<{ hook: string; shape: [number, number]; data: Float32Array }[]>;
  /**
   * The logit lens's top-k next tokens at one cell (layer 0 = embeddings … n_layers, position) of an
   * analysis (Analysis.lensHandle), computed on demand over the whole vocabulary: ids, log-probs and
   * display strings, most likely first. The worker keeps the latest two analyses.
   * @throws Error when the analysis is no longer held or the cell is outside its grid.
   */
  lensTop(handle: number, layer: number, position: number, k?: number): Promise<LensTopTokens>;
  /**
   * Streams tokens through onToken; resolves with the whole generation.
   * @throws Error as analyse does, and for a step window that starts at or after max_new_tokens.
   */
  generate(req: GenerateRequest & SpecRequest, onToken?: (e: TokenEvent) => void): Promise<Generation>;
  /**
   * Builds a steering vector at a hook from contrastive texts; onProgress after each text's
   * forward pass.
   * @throws Error for empty sets (ActAdd: not exactly one text each), an unknown or non-steerable
   *   hook, a bad head or marker.
   */
  steeringVector(req: VectorRequest, onProgress?: (p: Progress) => void): Promise<LibraryVector>;
  /**
   * Reads a vector file (.npy, .safetensors, .json) and checks it against the loaded model: the
   * hook its metadata names, else one of the model's steerable row widths.
   * @throws Error naming the file: unknown type, malformed, NaN/Infinity, or a width this model has not.
   */
  importVector(name: string, bytes: Uint8Array): Promise<LibraryVector>;
  /** A vector as file bytes (vector_io.ts): .npy '<f4' (d,), or .safetensors / .json with the provenance. */
  exportVector(format: VectorFormat, v: LibraryVector): Promise<Uint8Array>;
  /**
   * Starts a branch tree (engine/studies/branching/explorer.ts): generates the trunk, streaming its tokens;
   * the specs act on the trunk when draw.steered. Replaces the tree held before.
   * @throws Error for a bad prompt, future or spec, or a prompt plus new tokens longer than the context.
   */
  branchStart(req: ExploreRequest & SpecRequest, draw: DrawSettings, onToken?: (e: BranchTokenEvent) => void): Promise<BranchTree>;
  /**
   * Forks node `from` at absolute `position` to token `tokenId` and continues to the trunk's end,
   * reusing the KV cache of the shared prefix; the specs act on the fork's own passes when
   * draw.steered. cancel() stops it between tokens (the node is kept with stop = 'cancelled').
   * @returns the whole tree with the new node last.
   * @throws Error without a tree, or for a position outside that path or the token already there.
   */
  branchFork(req: ForkRequest, draw: DrawSettings, onToken?: (e: BranchTokenEvent) => void): Promise<BranchTree>;
  /** Lens margins (chosen − alternative, every layer row) at one position of a node's path. */
  branchLens(node: number, position: number, alternatives: number[]): Promise<LensMargins>;
  /**
   * Re-opens an exported tree (validated) as the tree forks continue from; its steered nodes are
   * recomputed under the request's specs when a fork needs their positions again.
   * @throws Error saying what is wrong with the file, or that its prompt tokenizes differently on this model.
   */
  branchRestore(req: RestoreRequest): Promise<BranchTree>;
  /**
   * Fork points of a node's path (engine/studies/branching/forks.ts): gaps, and outcome margins of seeded
   * continuations after each forced token; onProgress after each continuation. cancel() stops it
   * and it resolves with the points scored so far (cancelled = true).
   */
  forkPoints(req: ForkPointsRequest & SpecRequest, onProgress?: (p: ForkProgress) => void): Promise<ForkPointsResult>;
  /**
   * Loads an SAE onto the model's backend. It is sized first (safetensors header or .npz size) and
   * refused when it would not fit beside the model; then checked against the model (hook exists,
   * d_in = the hook's width). Loading a model unloads every SAE.
   * @param hook the hook of a Gemma Scope params.npz without a cfg.json beside it.
   * @throws Error naming the file and the problem (missing layout or tensor, wrong shape, unknown
   *   architecture, d_in or hook mismatch, too large).
   */
  loadSae(source: SaeSource, hook?: string): Promise<SaeInfo>;
  /** Frees a loaded SAE. */
  unloadSae(id: string): Promise<void>;
  /**
   * Per-token features, reconstruction statistics and (with both futures) margin attributions of
   * the unsteered prompt with the SAE attached (engine/studies/sae_features.ts).
   */
  analyseSae(id: string, req: SaeAnalysisRequest): Promise<SaeAnalysis>;
  /** A feature's decoder-direction lens, cosines with the given vectors and Neuronpedia link. */
  saeFeature(id: string, feature: number, vectors: { name: string; vector: Float32Array }[]): Promise<SaeFeatureInfo>;
  /** Cancels the running generation (it resolves with stop = 'cancelled'), sweep, branch, fork points, batch, probe, window, patching grid, report and any model download in flight. */
  cancel(): void;
  /** Hub models held in Cache Storage (repo, revision, endpoint, files, total bytes). */
  cachedModels(): Promise<CachedModel[]>;
  /** Deletes one cached model (every endpoint when none is given). @returns cache entries removed. */
  deleteCachedModel(repo: string, revision: string, endpoint?: string): Promise<number>;
  /** Whether a model is loaded and whether its GPU device was lost. */
  status(): Promise<WorkerStatus>;
  /**
   * Registers `callback` (pass it through Comlink.proxy), called with the reason when the loaded
   * model's GPU device is lost — a driver reset, the GPU process crashing, the tab backgrounded too
   * long — but not when load() replaces the model. Replaces an earlier callback. Afterwards every
   * model call throws until load() succeeds again.
   */
  onDeviceLost(callback: (reason: string) => void): void;
}
