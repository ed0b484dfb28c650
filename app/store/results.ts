import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { Analysis, Generation, TokenEvent } from '../../workers/protocol';

/** The analysis on display, with the model it came from and the display strings of its lens top ids. */
export interface AnalysisResult {
  analysis: Analysis;
  modelLabel: string;
  prompt: string;
  /** Display string per token id appearing in analysis.lensTopIds. */
  idStrings: Map<number, string>;
}

/** One head's attention pattern [query, key] from the analysis on display. */
export interface PatternResult {
  layer: number;
  head: number;
  /** Row-major [T, T]. */
  data: Float32Array;
}

/** A generation, streamed: `events` grow as tokens arrive; `final` is set when it ends. */
export interface GenerationResult {
  modelLabel: string;
  prompt: string;
  maxNewTokens: number;
  events: TokenEvent[];
  final: Generation | null;
}

/** The results slice: what the views draw. Results stay until replaced, even when a later job fails. */
export interface ResultsSlice {
  promptTokens: { ids: number[]; tokens: string[] } | null;
  result: AnalysisResult | null;
  pattern: PatternResult | null;
  gen: GenerationResult | null;
  setPromptTokens(t: { ids: number[]; tokens: string[] } | null): void;
  setResult(r: AnalysisResult): void;
  setPattern(p: PatternResult | null): void;
  startGeneration(g: Omit<GenerationResult, 'events' | 'final'>): void;
  addToken(e: TokenEvent): void;
  finishGeneration(g: Generation): void;
}

export const createResultsSlice: StateCreator<AppState, [], [], ResultsSlice> = (set) => ({
  promptTokens: null,
  result: null,
  pattern: null,
  gen: null,
  setPromptTokens: (promptTokens) => set({ promptTokens }),
  setResult: (result) => set({ result, pattern: null }),
  setPattern: (pattern) => set({ pattern }),
  startGeneration: (g) => set({ gen: { ...g, events: [], final: null } }),
  addToken: (e) => set((s) => (s.gen ? { gen: { ...s.gen, events: [...s.gen.events, e] } } : {})),
  finishGeneration: (final) => set((s) => (s.gen ? { gen: { ...s.gen, final } } : {})),
});
