import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { Analysis, Generation, ResolvedFuture, SweepResult, TokenEvent } from '../../workers/protocol';
import type { InterventionDraft } from './steering';
import type { FutureDraft } from './experiment';
import type { TurnRun } from '../lib/stale';

/** An intervention a result was computed under, with its place in the list at the time (#n). */
export interface AppliedIntervention {
  n: number;
  draft: InterventionDraft;
}

/** The analysis on display, with the model it came from and the prompt and chat turn it read. */
export interface AnalysisResult extends TurnRun {
  analysis: Analysis;
  modelLabel: string;
  /** The model load it was computed with (store modelIdentity: model · weight storage · backend). */
  computedWith: string;
  prompt: string;
  /** The futures as they were written when it was analysed. */
  good: FutureDraft;
  bad: FutureDraft;
  /** The interventions `analysis` was computed under (empty: unsteered). */
  steering: AppliedIntervention[];
  /** The same prompt without interventions, when there were any. */
  baseline: Analysis | null;
}

/** One head's attention pattern [query, key] from the analysis on display. */
export interface PatternResult {
  layer: number;
  head: number;
  /** Row-major [T, T]. */
  data: Float32Array;
}

/** Every head's attention pattern of one layer from the analysis on display (the All heads panel). */
export interface LayerPatternsResult {
  layer: number;
  nHeads: number;
  /** blocks.{layer}.attn.hook_pattern, flat [n_heads, T, T] (split with lib/head_patterns.ts). */
  data: Float32Array;
}

/** One generation, streamed: `events` grow as tokens arrive; `final` is set when it ends. */
export interface GenerationRun {
  events: TokenEvent[];
  final: Generation | null;
}

/** Which of the two runs of a steered generation. */
export type RunName = 'unsteered' | 'steered';

/**
 * A generation without interventions (the fields of GenerationRun) and, when interventions were
 * on, the same request under them (same seed), run after it.
 */
export interface GenerationResult extends GenerationRun, TurnRun {
  modelLabel: string;
  /** The model load it was computed with (store modelIdentity: model · weight storage · backend). */
  computedWith: string;
  prompt: string;
  maxNewTokens: number;
  steering: AppliedIntervention[];
  steered: GenerationRun | null;
}

/**
 * A future's tokens as the worker resolved them after the prompt while the user typed, or why it
 * did not resolve; `key` (lib/futures.ts futureKey) says for which prompt and text.
 */
export type FutureChips = { key: string } & ({ resolved: ResolvedFuture } | { error: string });

/** A dose–response sweep on display, with what it was run on. */
export interface SweepDisplay {
  result: SweepResult;
  modelLabel: string;
  /** The model load it was computed with (store modelIdentity: model · weight storage · backend). */
  computedWith: string;
  prompt: string;
  good: string;
  bad: string;
  type: 'add' | 'add_norm_preserving' | 'rotate';
  vectorId: string;
  vectorName: string;
  /** The intervention the last picked point was loaded into (a later pick replaces it), or null. */
  pickedId: number | null;
}

/** The results slice: what the views draw. Results stay until replaced, even when a later job fails. */
export interface ResultsSlice {
  /** The token strip's tokens: a tokenized prompt, or an analysis's, whose last `prefix` positions are the futures' teacher-forced shared prefix (decision_point.ts; 0 or absent: none). */
  promptTokens: { ids: number[]; tokens: string[]; prefix?: number } | null;
  futureChips: { good: FutureChips | null; bad: FutureChips | null };
  result: AnalysisResult | null;
  pattern: PatternResult | null;
  layerPatterns: LayerPatternsResult | null;
  gen: GenerationResult | null;
  sweep: SweepDisplay | null;
  setPromptTokens(t: { ids: number[]; tokens: string[]; prefix?: number } | null): void;
  setFutureChips(chips: { good: FutureChips; bad: FutureChips }): void;
  setResult(r: AnalysisResult): void;
  setPattern(p: PatternResult | null): void;
  setLayerPatterns(p: LayerPatternsResult | null): void;
  startGeneration(g: Omit<GenerationResult, 'events' | 'final' | 'steered'>): void;
  /** Starts the steered run of the generation on display (after its unsteered run). */
  startSteeredRun(): void;
  /** Appends streamed tokens (a frame's worth at once) to a run of the generation on display. */
  addTokens(events: TokenEvent[], run?: RunName): void;
  finishGeneration(g: Generation, run?: RunName): void;
  setSweep(s: SweepDisplay | null): void;
  setSweepPick(id: number): void;
}

/** The generation with one of its runs changed. */
function withRun(gen: GenerationResult, run: RunName, f: (r: GenerationRun) => GenerationRun): GenerationResult {
  if (run === 'steered') return gen.steered ? { ...gen, steered: f(gen.steered) } : gen;
  return { ...gen, ...f(gen) };
}

export const createResultsSlice: StateCreator<AppState, [], [], ResultsSlice> = (set) => ({
  promptTokens: null,
  futureChips: { good: null, bad: null },
  result: null,
  pattern: null,
  layerPatterns: null,
  gen: null,
  sweep: null,
  setPromptTokens: (promptTokens) => set((s) => ({
    promptTokens,
    // a selection on other tokens would steer the wrong ones
    tokenSelection: promptTokens && s.promptTokens && promptTokens.ids.join() === s.promptTokens.ids.join() ? s.tokenSelection : null,
  })),
  setFutureChips: (futureChips) => set({ futureChips }),
  setResult: (result) => set({ result, pattern: null, layerPatterns: null }),
  setPattern: (pattern) => set({ pattern }),
  setLayerPatterns: (layerPatterns) => set({ layerPatterns }),
  startGeneration: (g) => set({ gen: { ...g, events: [], final: null, steered: null } }),
  startSteeredRun: () => set((s) => (s.gen ? { gen: { ...s.gen, steered: { events: [], final: null } } } : {})),
  addTokens: (events, run = 'unsteered') => set((s) => (s.gen ? { gen: withRun(s.gen, run, (r) => ({ ...r, events: [...r.events, ...events] })) } : {})),
  finishGeneration: (final, run = 'unsteered') => set((s) => (s.gen ? { gen: withRun(s.gen, run, (r) => ({ ...r, final })) } : {})),
  setSweep: (sweep) => set({ sweep }),
  setSweepPick: (pickedId) => set((s) => (s.sweep ? { sweep: { ...s.sweep, pickedId } } : {})),
});
