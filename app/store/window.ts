import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { mergeSetter } from './merge_setter';
import type { WindowResult } from '../../workers/protocol';
import type { AppliedIntervention } from './results';

/** The intervention window as set up in its view. */
export interface WindowSettings {
  /** Draft id of the intervention switched on from step k; null = every enabled intervention. */
  interventionId: number | null;
  maxNewTokens: number;
  /** Last start step K as typed ("" = N − 1). */
  kMax: string;
  score: 'mean' | 'margin' | 'contains';
  /** mean: the last M steps ("" = all N); margin: the step S; contains: the text. */
  scoreArg: string;
}

/** An intervention window on display, with what it was run on. */
export interface WindowDisplay {
  result: WindowResult;
  modelLabel: string;
  /** The model load it was computed with (store modelIdentity: model · weight storage · backend). */
  computedWith: string;
  prompt: string;
  good: string;
  bad: string;
  /** The interventions switched on from step k. */
  steering: AppliedIntervention[];
  /** How the outcome was scored, in words. */
  scoreLabel: string;
  /** The k whose continuation is shown beside the unsteered one. */
  picked: number;
}

/** The window slice: settings and the result on display. */
export interface WindowSlice {
  windowSettings: WindowSettings;
  windowRun: WindowDisplay | null;
  setWindowSettings(patch: Partial<WindowSettings>): void;
  setWindowRun(w: WindowDisplay | null): void;
  pickWindowK(k: number): void;
}

export const createWindowSlice: StateCreator<AppState, [], [], WindowSlice> = (set) => ({
  windowSettings: { interventionId: null, maxNewTokens: 12, kMax: '', score: 'mean', scoreArg: '' },
  windowRun: null,
  setWindowSettings: mergeSetter(set, 'windowSettings'),
  setWindowRun: (windowRun) => set({ windowRun }),
  pickWindowK: (picked) => set((s) => (s.windowRun ? { windowRun: { ...s.windowRun, picked } } : {})),
});
