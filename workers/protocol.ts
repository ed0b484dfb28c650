/**
 * The typed contract between the UI and the inference worker (Comlink). The UI imports these
 * types only; the worker implements `InferenceApi`. Progress and token streams are callbacks
 * passed through `Comlink.proxy`; large arrays come back as transferables.
 */
import type { Analysis, AnalyseRequest, Generation, GenerateRequest, ModelInfo, PromptInput, TokenEvent } from './engine/api';
import type { LoadProgress } from './engine/model/load';
import type { CachedModel } from './engine/io/cache';

export type { Analysis, AnalyseRequest, Generation, GenerateRequest, ModelInfo, PromptInput, TokenEvent, LoadProgress };
export type { FutureInput, ResolvedFuture, SinkStats } from './engine/api';
export type { Intervention, PositionSelector, StepWindow } from './engine/model/intervention';
export type { RowOp } from './engine/backend/backend';
export type { CachedModel } from './engine/io/cache';
export type { CatalogEntry } from './engine/io/catalog';

/** Where a model comes from. */
export type ModelSource =
  /** A folder served over HTTP: the dev server's /models/<name>/ or a self-hosted mirror prefix. */
  | { kind: 'url'; url: string; label?: string }
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
}

export interface InferenceApi {
  /**
   * Loads a model (replacing the current one). With 'auto', WebGPU is tried first and the CPU
   * backend is used with the reason when it is unavailable.
   * Hub and URL models are first estimated from their config and safetensors headers and refused,
   * before any weight is fetched, when they would not fit the device (the message names the limit).
   * Hub downloads are kept in Cache Storage: a second load of the same repo@revision is offline.
   * cancel() stops a download in flight (the load rejects with a "cancelled: ..." error).
   * @throws Error with a user-readable message; the worker stays usable.
   */
  load(source: ModelSource, backend: BackendChoice, onProgress?: (p: LoadProgress) => void, options?: LoadOptions): Promise<ModelInfo>;
  /** Prompt → ids and display tokens. */
  tokenize(p: PromptInput): Promise<{ ids: number[]; tokens: string[] }>;
  /**
   * Display string of each token id on its own, as it reads after the last analysed prompt's first
   * token (so leading spaces show: " Tom", not "Tom").
   */
  tokenStrings(ids: number[]): Promise<string[]>;
  /** Full prompt analysis (lens margins, sinks, norms). */
  analyse(req: AnalyseRequest): Promise<Analysis>;
  /** Attention pattern [T, T] of one head from the last analysis. */
  pattern(layer: number, head: number): Promise<Float32Array>;
  /** Streams tokens through onToken; resolves with the whole generation. */
  generate(req: GenerateRequest, onToken?: (e: TokenEvent) => void): Promise<Generation>;
  /** Cancels the running generation (it resolves with stop = 'cancelled') and any model download in flight. */
  cancel(): void;
  /** Hub models held in Cache Storage (repo, revision, endpoint, files, total bytes). */
  cachedModels(): Promise<CachedModel[]>;
  /** Deletes one cached model (every endpoint when none is given). @returns cache entries removed. */
  deleteCachedModel(repo: string, revision: string, endpoint?: string): Promise<number>;
}
