import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { mergeSetter } from './merge_setter';
import type { ProbeResult } from '../../workers/protocol';
import type { SetRun } from '../lib/stale';

/** The probe set and settings as edited in the probe view (texts one per line). */
export interface ProbeSettings {
  /** Where the set came from (an example's name, a file name, or "pasted"). */
  source: string;
  positive: string;
  negative: string;
  /** Class names [negative, positive]. */
  classes: [string, string];
  /** "last" or a token index as typed (negative counts from the end). */
  position: string;
  folds: number;
  seed: number;
  /** The futures whose margin is the behaviour the probe is meant to measure, as typed (a set file's suggested ones when it has them). */
  good: string;
  bad: string;
  /** The intervention the probes are read under: "i<id>" an intervention of the experiment, "v<id>" a library vector added at its hook, "" none. */
  underPick: string;
  /** α of a library vector picked in underPick. */
  underAlpha: number;
  /** Greedy new tokens per prompt in which to look for the good future (0 = none). */
  underGenerate: number;
}

/** Probes on display, with what they were run on: the set's prompts and their chat turn (lib/stale.ts setStaleParts compares them with the set now). */
export interface ProbeDisplay extends SetRun {
  result: ProbeResult;
  source: string;
  positive: string[];
  negative: string[];
}

/** The probes slice: the set being edited and the result on display. */
export interface ProbeSlice {
  probeSettings: ProbeSettings;
  probe: ProbeDisplay | null;
  setProbeSettings(patch: Partial<ProbeSettings>): void;
  setProbe(p: ProbeDisplay | null): void;
}

export const createProbeSlice: StateCreator<AppState, [], [], ProbeSlice> = (set) => ({
  probeSettings: { source: '', positive: '', negative: '', classes: ['negative', 'positive'], position: 'last', folds: 5, seed: 0, good: '', bad: '', underPick: '', underAlpha: 1, underGenerate: 0 },
  probe: null,
  setProbeSettings: mergeSetter(set, 'probeSettings'),
  setProbe: (probe) => set({ probe }),
});
