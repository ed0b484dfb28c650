/**
 * Placing interventions from the views (heatmap cells, token ranges, sweep points). These only
 * edit the experiment; the next analysis or generation runs them.
 */
import { useStore } from '../store';
import type { PositionSelector } from '../../workers/protocol';
import type { InterventionDraft } from '../store/steering';
import { hookOfLensRow, vectorWidth } from '../lib/hooks';

/** The newest library vector that fits the hook's width (else the newest), for a new intervention. */
function defaultVector(hook: string): string | null {
  const { vectors, info } = useStore.getState();
  const w = info ? vectorWidth(hook, info, false) : null;
  const fits = vectors.filter((v) => v.dModel === w);
  return (fits.at(-1) ?? vectors.at(-1))?.id ?? null;
}

/** A new `add` intervention (α = 1, every step) at a hook and positions. */
function draft(hook: string, positions: PositionSelector, patch: Partial<InterventionDraft> = {}): Omit<InterventionDraft, 'id'> {
  return {
    enabled: true, hook, type: 'add', dose: 1, rotateBy: 'theta', mode: 'project', vectorId: defaultVector(hook),
    source: '', head: null, positions, steps: null, ...patch,
  };
}

/** The hook a new intervention starts at when nothing says where: the residual stream after the block before the last. */
export function defaultHook(): string {
  const n = useStore.getState().info?.nLayers ?? 1;
  return `blocks.${Math.max(0, n - 2)}.hook_resid_post`;
}

/** Adds an intervention at a cell of the margin heatmap: its layer's residual stream, at that token. */
export function placeAtLensCell(row: number, col: number): void {
  useStore.getState().addIntervention(draft(hookOfLensRow(row), [col]));
}

/** Adds an intervention on a range of prompt tokens, at the hook of the intervention open in the editor (else the default). */
export function placeOnTokens(start: number, end: number): void {
  const s = useStore.getState();
  const open = s.interventions.find((d) => d.id === s.selectedIntervention);
  const hook = open?.hook ?? defaultHook();
  s.addIntervention(draft(hook, end - start === 1 ? [start] : { start, end }));
  s.setTokenSelection(null);
}

/** Adds an intervention with default settings (all positions, every step). */
export function addDefaultIntervention(): void {
  useStore.getState().addIntervention(draft(defaultHook(), 'all'));
}

/** Adds the intervention of one point of a dose–response sweep (its hook, type, dose and vector; all positions). @returns its id. */
export function placeFromSweep(hook: string, type: InterventionDraft['type'], dose: number, vectorId: string): number {
  return useStore.getState().addIntervention(draft(hook, 'all', { type, dose, vectorId, rotateBy: 'theta' }));
}
