import { useStore } from '../store';
import { futureInput } from '../lib/futures';
import { runStudy } from './study';
import type { CompareJob, PatchHook } from '../../workers/protocol';

/** What the Compare view asks beyond the experiment: the patching hooks, per position, and the reverse direction. */
export interface CompareSettings {
  hooks: PatchHook[];
  positions: boolean;
  reverse: boolean;
}

/** The Compare view's settings when it opens (and when an experiment reopens on it). */
export const DEFAULT_COMPARE: CompareSettings = { hooks: ['resid_pre', 'attn_out', 'mlp_out', 'z'], positions: false, reverse: true };

/** The hooks in the grid's column order. */
export const COMPARE_HOOKS: readonly PatchHook[] = ['resid_pre', 'attn_out', 'mlp_out', 'z'];

/** The comparison request for the experiment's prompt and futures; null when a future does not parse. */
export function compareRequest(settings: CompareSettings = DEFAULT_COMPARE): CompareJob | null {
  const s = useStore.getState();
  try {
    return { prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, good: futureInput(s.good), bad: futureInput(s.bad), hooks: COMPARE_HOOKS.filter((h) => settings.hooks.includes(h)), positions: settings.positions, reverse: settings.reverse };
  } catch {
    return null;
  }
}

/** Runs the comparison of model A and model B (the `compare` study) on the experiment's prompt and futures. */
export async function runCompare(settings: CompareSettings = DEFAULT_COMPARE): Promise<void> {
  const req = compareRequest(settings);
  if (req) await runStudy('compare', req, { label: 'Comparing models A and B', what: 'Could not compare the models' });
}
