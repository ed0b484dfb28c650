import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { mergeSetter } from './merge_setter';
import { DEFAULT_PROMPT } from './experiment';
import type { PairRun } from '../lib/stale';
import { KNOWN_CORRUPTIONS } from '../lib/patching_prompts';
import type { PatchDirection, PatchHook, PatchingResult, PatchMetric } from '../../workers/protocol';

/** The patching grid as set up in its view; the futures are the experiment's. */
export interface PatchingSettings {
  /** The clean prompt (starts as the experiment's default prompt). */
  clean: string;
  /** The corrupted prompt (same token length as the clean one). */
  corrupt: string;
  hook: PatchHook;
  direction: PatchDirection;
  metric: PatchMetric;
}

/** A patching grid on display, with what it was run on (lib/stale.ts pairStaleParts compares the rest). */
export interface PatchingDisplay extends PairRun {
  result: PatchingResult;
}

/** The patching slice: the view's settings and the grid on display (kept until replaced). */
export interface PatchingSlice {
  patchingSettings: PatchingSettings;
  patching: PatchingDisplay | null;
  /**
   * Whether the pair still follows the experiment's prompt (actions/patching.ts
   * followExperimentPrompt): true until the user edits either prompt or picks the example.
   */
  patchingFollowsPrompt: boolean;
  setPatchingSettings(patch: Partial<PatchingSettings>): void;
  setPatchingFollowsPrompt(follows: boolean): void;
  setPatching(p: PatchingDisplay | null): void;
}

/** The default corruption of the default prompt: " Tom" replaced by " dad" (21 tokens each on stories260K; lib/patching_prompts.ts says why). */
export const DEFAULT_CORRUPT = KNOWN_CORRUPTIONS[DEFAULT_PROMPT];

export const createPatchingSlice: StateCreator<AppState, [], [], PatchingSlice> = (set) => ({
  patchingSettings: { clean: DEFAULT_PROMPT, corrupt: DEFAULT_CORRUPT, hook: 'resid_pre', direction: 'denoise', metric: 'final' },
  patching: null,
  patchingFollowsPrompt: true,
  setPatchingSettings: mergeSetter(set, 'patchingSettings'),
  setPatchingFollowsPrompt: (patchingFollowsPrompt) => set({ patchingFollowsPrompt }),
  setPatching: (patching) => set({ patching }),
});
