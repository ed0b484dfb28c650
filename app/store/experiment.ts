import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { mergeSetter } from './merge_setter';

/** How a future is written: text (alternatives separated by "|"), token ids, or a tool call (JSON {"name", "arguments"}). */
export type FutureMode = 'text' | 'ids' | 'tool';

/** A tool offered to the model with the chat template (the experiment file's `tools` entry). */
export type ToolSpec = {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
};

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
  /** With the chat template: the system prompt (undefined: none) and the tools offered. */
  system: string | undefined;
  tools: ToolSpec[];
  /** With the chat template: enable_thinking for templates that read it (prompt.ts PromptInput.enableThinking); undefined: not passed, the template's default. */
  enableThinking: boolean | undefined;
  good: FutureDraft;
  bad: FutureDraft;
  generation: GenerationSettings;
  setPrompt(prompt: string): void;
  setChatTemplate(on: boolean): void;
  /** The system prompt ('' or undefined: none). */
  setSystem(system: string | undefined): void;
  /** The tools offered (checked by the caller: experiment.ts toolsInput). */
  setTools(tools: ToolSpec[]): void;
  /** enable_thinking (undefined: the template's default). */
  setEnableThinking(on: boolean | undefined): void;
  setFuture(which: 'good' | 'bad', draft: FutureDraft): void;
  setGeneration(patch: Partial<GenerationSettings>): void;
}

export const DEFAULT_PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';

export const createExperimentSlice: StateCreator<AppState, [], [], ExperimentSlice> = (set) => ({
  prompt: DEFAULT_PROMPT,
  chatTemplate: false,
  system: undefined,
  tools: [],
  enableThinking: undefined,
  good: { mode: 'text', value: ' Tom' },
  bad: { mode: 'text', value: ' Lily' },
  generation: { maxNewTokens: 32, temperature: 0, topK: 0, seed: 0 },
  setPrompt: (prompt) => set({ prompt }),
  setChatTemplate: (chatTemplate) => set({ chatTemplate }),
  setSystem: (system) => set({ system: system ? system : undefined }),
  setTools: (tools) => set({ tools }),
  setEnableThinking: (enableThinking) => set({ enableThinking }),
  setFuture: (which, draft) => set(which === 'good' ? { good: draft } : { bad: draft }),
  setGeneration: mergeSetter(set, 'generation'),
});
