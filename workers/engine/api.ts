/**
 * Public types of the engine: what the worker, the runner and the UI exchange. Arrays are flat
 * typed arrays (row-major) so they cross worker boundaries as transferables.
 */
import type { WeightStorage } from './model/quant_error';
import type { Intervention } from './model/intervention';
import type { ModelSpec } from './arch/spec';
import type { FutureInput, PromptInput, ResolvedFuture } from './prompt';
import type { LensMargins } from './model/lens';
import type { MassiveActivations } from './analysis/residual';
import type { SinkStats } from './analysis/sinks';
import type { SharedPrefix } from './decision_point';

/** The spec fields the UI shows (nCtx = max_position_embeddings). */
export const MODEL_INFO_FIELDS = ['modelType', 'nLayers', 'dModel', 'nHeads', 'nKvHeads', 'dHead', 'dMlp', 'dVocab', 'nCtx'] as const;

export interface ModelInfo extends Pick<ModelSpec, (typeof MODEL_INFO_FIELDS)[number]> {
  label: string;
  /** Positions the KV cache was allocated for, min(nCtx, the load's contextLength): the longest prompt plus generation this session runs. */
  contextLength: number;
  backend: { kind: 'cpu' | 'webgpu'; description: string };
  hookNames: string[];
  hasChatTemplate: boolean;
  /** The chat template reads `enable_thinking` (conversation.ts templateReadsThinking): PromptInput.enableThinking changes its rendering. */
  templateReadsThinking: boolean;
  /** Byte-fallback tokens ("<0xE2>"): token id → byte value, so a byte that forms no character can be shown as itself. */
  byteTokens: Record<number, number>;
  /** Weight storage (float32, binary16, Q8_0, Q4_0) and, when quantised, the measured logit error against float32. */
  weights: WeightStorage;
}

export interface AnalyseRequest extends PromptInput {
  good: FutureInput;
  bad: FutureInput;
  interventions?: Intervention[];
  /** Sink threshold ε (default 0.3, Gu et al. 2024). */
  sinkEps?: number;
}

/**
 * Engine.analyse's result: the prompt and futures as tokens, then one field group per analysis,
 * each typed beside its function (LensMargins: model/lens.ts; residual norms and
 * MassiveActivations: analysis/residual.ts; SinkStats: analysis/sinks.ts).
 */
export interface Analysis extends LensMargins {
  /** What the user should know about the inputs that did not stop the run (Engine.promptWarnings). */
  warnings?: string[];
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts): `ids` then end with it and `good` / `bad` are what follows; null when they share none. */
  sharedPrefix: SharedPrefix | null;
  ids: number[];
  tokens: string[];
  nLayers: number;
  nHeads: number;
  good: ResolvedFuture;
  bad: ResolvedFuture;
  /** Teacher-forced sequence margin after the last prompt token (final layer), multi-token futures. */
  sequenceMargin: number;
  /** Handle of this analysis's residual stack in the engine: Engine.lensTop(handle, layer, position) gives a cell's lens top tokens. */
  lensHandle: number;
  /** ‖h^l_t‖ [(n_layers+1)·T], same rows as the lens (ResidualStats.norms). */
  residNorms: Float32Array;
  massive: MassiveActivations;
  sinks: SinkStats;
}

export interface GenerateRequest extends PromptInput {
  good: FutureInput;
  bad: FutureInput;
  maxNewTokens: number;
  /** 0 = greedy (first maximum on ties). */
  temperature?: number;
  /** Sample only among the k most likely tokens (0 = all). */
  topK?: number;
  seed?: number;
  /** Stop at an eos_token_id from config.json (default true). */
  stopAtEos?: boolean;
  interventions?: Intervention[];
}

export interface TokenEvent {
  /** Generation step (0 = first new token). */
  step: number;
  id: number;
  token: string;
  /** Margin Δ of the futures in the distribution this token was drawn from. */
  margin: number;
  /** log p of the chosen token. */
  logProb: number;
}

export interface Generation {
  /** As Analysis.warnings. */
  warnings?: string[];
  promptIds: number[];
  ids: number[];
  tokens: string[];
  text: string;
  /** Δ at each step [ids.length]. */
  margins: number[];
  /** Why generation stopped. */
  stop: 'length' | 'eos' | 'context' | 'cancelled';
}
