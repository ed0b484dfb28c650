// @vitest-environment happy-dom
/**
 * The progress line of a model load names what the load is doing at each stage (a trial read
 * "Loading stories260K ready" for seconds while the load went on). Store and DOM only.
 */
import { act, createElement } from 'react';
import { expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));

const { useStore } = await import('../../app/store');
const { Progress } = await import('../../app/components/Progress');

const dom = domPerTest(useStore);

it('each load stage in words; the weights with bytes and the time left; never the bare word "ready"', () => {
  act(() => useStore.getState().setJob({ kind: 'load', label: 'Loading stories260K', startedAt: performance.now(), cancellable: true }));
  act(() => useStore.getState().loadProgressed({ stage: 'config' }));
  act(() => dom.root.render(createElement(Progress)));
  const detail = () => dom.host.querySelector('[data-testid="progress-detail"]')!.textContent;
  expect(detail()).toBe('reading the config');
  act(() => useStore.getState().loadProgressed({ stage: 'weights', loaded: 512 * 1024, total: 1024 * 1024, etaSeconds: 2.2 }));
  expect(detail()).toMatch(/^weights · .+ of .+ · 3 s left$/);
  act(() => useStore.getState().loadProgressed({ stage: 'kernels' }));
  expect(detail()).toBe('compiling GPU kernels');
  act(() => useStore.getState().loadProgressed({ stage: 'ready' }));
  expect(detail()).toBe('weights and tokenizer loaded · starting the engine');
});
