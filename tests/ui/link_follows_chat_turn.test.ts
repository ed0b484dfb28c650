// @vitest-environment happy-dom
/**
 * The link and local storage follow an edit of the chat turn (actions/experiment.ts
 * followExperiment): editing only the system prompt or the tools saved nothing, so a reload or a
 * copied link brought back the old ones. Store, timers and local storage only.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
const { useStore } = await import('../../app/store');
const { followExperiment, STORAGE_KEY } = await import('../../app/actions/experiment');

const TOOL = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: {} } } };
const saved = () => JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null') as { system?: string; tools: unknown[] } | null;

afterEach(() => vi.useRealTimers());

describe('the saved experiment follows the chat turn', () => {
  it('a system prompt edit, then a tools edit, is each saved on its own', () => {
    vi.useFakeTimers();
    localStorage.clear();
    useStore.setState({ chatTemplate: true, system: undefined, tools: [], lastLoad: { source: { kind: 'url', url: 'models/stories260K/', label: 'stories260K' }, options: {} } });
    const stop = followExperiment();
    try {
      useStore.getState().setSystem('Be brief.');
      vi.advanceTimersByTime(400);
      expect(saved()?.system).toBe('Be brief.');
      useStore.getState().setTools([TOOL]);
      vi.advanceTimersByTime(400);
      expect(saved()?.tools).toEqual([TOOL]);
    } finally {
      stop();
    }
  });
});
