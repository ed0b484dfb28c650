/**
 * Which Hub models this browser loaded last, kept in local storage (never a token), so the start
 * page offers the last-used cached model first.
 */
import { DEFAULT_ENDPOINT } from '../../workers/shared';

/** Local-storage key of the recently loaded Hub models, newest first. */
export const RECENT_KEY = 'branchpoint.recentModels';
/** How many recent models are remembered. */
const KEEP = 10;

/** A Hub model as the cache names it. */
export interface ModelKey {
  endpoint: string;
  repo: string;
  revision: string;
}

const same = (a: ModelKey, b: ModelKey) => a.endpoint === b.endpoint && a.repo === b.repo && a.revision === b.revision;

/** The recently loaded models, newest first; [] when none are stored or storage is unreadable. */
export function recentModels(storage: Pick<Storage, 'getItem'> = localStorage): ModelKey[] {
  try {
    const list = JSON.parse(storage.getItem(RECENT_KEY) ?? '[]') as unknown;
    return Array.isArray(list) ? list.filter((m): m is ModelKey => !!m && typeof m.repo === 'string' && typeof m.revision === 'string' && typeof m.endpoint === 'string') : [];
  } catch {
    return [];
  }
}

/** Records a Hub model as the last one loaded (endpoint defaults to huggingface.co, revision to main). Storage errors are ignored. */
export function noteModelUsed(m: { repo: string; revision?: string; endpoint?: string }, storage: Pick<Storage, 'getItem' | 'setItem'> = localStorage): void {
  const key = { endpoint: m.endpoint || DEFAULT_ENDPOINT, repo: m.repo, revision: m.revision ?? 'main' };
  try {
    storage.setItem(RECENT_KEY, JSON.stringify([key, ...recentModels(storage).filter((r) => !same(r, key))].slice(0, KEEP)));
  } catch { /* storage full or disabled: the offer falls back to cache order */ }
}

/**
 * Cached models ordered by how recently they were loaded (most recent first; never-loaded ones
 * after, in their given order).
 * @returns the ordered models and the last-used one among them (null when none was loaded here).
 */
export function byRecency<T extends ModelKey>(models: readonly T[], recent: readonly ModelKey[]): { ordered: T[]; last: T | null } {
  const rank = (m: T) => { const i = recent.findIndex((r) => same(r, m)); return i < 0 ? Infinity : i; };
  const ordered = models.map((m, i) => ({ m, i, r: rank(m) })).sort((a, b) => a.r - b.r || a.i - b.i).map((x) => x.m);
  return { ordered, last: ordered.length && rank(ordered[0]) < Infinity ? ordered[0] : null };
}
