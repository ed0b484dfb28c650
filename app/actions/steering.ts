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

/** Types a sweep point can be loaded into: the sweep's own (a dose on a vector). */
const SWEEP_TYPES: readonly InterventionDraft['type'][] = ['add', 'add_norm_preserving', 'rotate'];

/**
 * Loads point (layer li, dose di) of the sweep on display into the list: its hook, type, dose and
 * vector at all positions, every step, as the sweep ran it. It replaces, rather than joins, the
 * intervention an earlier pick from this sweep was loaded into, else one of the sweep's types at
 * that hook with that vector: two there would add their doses (α1 + α2), which the sweep did not
 * measure. Otherwise it is added. It is opened in the editor.
 * @returns its id and whether it replaced one, or null when no sweep is on display.
 */
export function placeFromSweep(li: number, di: number): { id: number; replaced: boolean } | null {
  const s = useStore.getState();
  const sw = s.sweep;
  if (!sw) return null;
  const hook = sw.result.hooks[li];
  const point = draft(hook, 'all', { type: sw.type, dose: sw.result.doses[di], vectorId: sw.vectorId, rotateBy: 'theta' });
  const target = s.interventions.find((d) => d.id === sw.pickedId)
    ?? s.interventions.find((d) => d.hook === hook && d.vectorId === sw.vectorId && SWEEP_TYPES.includes(d.type));
  let id: number;
  if (target) {
    id = target.id;
    s.updateIntervention(id, point);
    s.selectIntervention(id);
  } else {
    id = s.addIntervention(point);
  }
  s.setSweepPick(id);
  return { id, replaced: target !== undefined };
}
