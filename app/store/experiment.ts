import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { mergeSetter } from './merge_setter';

/** How a future is written: text (alternatives separated by "|") or token ids. */
export type FutureMode = 'text' | 'ids';

export interface FutureDraft {
  mode: FutureMode;
  value: string;
}

export interface GenerationSettings {
  maxNewTokens: number;
  /** 0 = greedy. */
  temperature: number;
  /** 0 = all tokens. */
  topK: number;
  seed: number;
}

/** The experiment slice: the prompt, the two futures and the generation settings. */
export interface ExperimentSlice {
  prompt: string;
  chatTemplate: boolean;
  good: FutureDraft;
  bad: FutureDraft;
  generation: GenerationSettings;
  setPrompt(prompt: string): void;
  setChatTemplate(on: boolean): void;
  setFuture(which: 'good' | 'bad', draft: FutureDraft): void;
  setGeneration(patch: Partial<GenerationSettings>): void;
}

export const DEFAULT_PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';

export const createExperimentSlice: StateCreator<AppState, [], [], ExperimentSlice> = (set) => ({
  prompt: DEFAULT_PROMPT,
  chatTemplate: false,
  good: { mode: 'text', value: ' Tom' },
  bad: { mode: 'text', value: ' Lily' },
  generation: { maxNewTokens: 32, temperature: 0, topK: 0, seed: 0 },
  setPrompt: (prompt) => set({ prompt }),
  setChatTemplate: (chatTemplate) => set({ chatTemplate }),
  setFuture: (which, draft) => set(which === 'good' ? { good: draft } : { bad: draft }),
  setGeneration: mergeSetter(set, 'generation'),
});
