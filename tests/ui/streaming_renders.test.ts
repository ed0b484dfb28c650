// @vitest-environment happy-dom
/**
 * Issue 11, target 6 (a UI that never stalls), checked on the components themselves: a job starting
 * or ending, a streamed token or a hover must not re-render the whole workbench (App), and the
 * Generation view's margin curve is mounted before the first generation, so the frame that shows
 * the first streamed tokens adds points to it instead of building the chart. Render counts and DOM
 * identity only; speed is measured in bench/ui_longtasks.ts.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';
import type { TokenEvent } from '../../workers/protocol';

const renders = vi.hoisted(() => ({ promptEditor: 0 }));
vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
// App starts the worker and restores the last experiment on mount: not wanted here.
vi.mock('../../app/actions/experiment', async (orig) => ({ ...(await orig<object>()), startUp: vi.fn(), followExperiment: vi.fn() }));
// A child App renders without props: it re-renders exactly when App does.
vi.mock('../../app/components/PromptEditor', () => ({ PromptEditor: () => { renders.promptEditor++; return null; } }));

const { useStore } = await import('../../app/store');
const { App } = await import('../../app/App');
const { GenerationView } = await import('../../app/views/GenerationView');

const dom = domPerTest(useStore);

const token = (step: number): TokenEvent => ({ step, id: 100 + step, token: ` t${step}`, margin: step % 2 ? 0.5 : -0.25, logProb: -1.5 });
/** What generate() does in the store for a run of `n` tokens delivered in frames of `perFrame`. */
function streamTokens(n: number, perFrame: number) {
  const s = useStore.getState();
  act(() => s.setJob({ kind: 'generate', label: 'Generating', startedAt: 0, cancellable: true }));
  act(() => s.startGeneration({ modelLabel: 'stories260K', computedWith: 'stories260K · float32 · WebGPU', prompt: s.prompt, chatTemplate: false, system: undefined, tools: [], maxNewTokens: n, steering: [] }));
  for (let i = 0; i < n; i += perFrame) act(() => useStore.getState().addTokens(Array.from({ length: Math.min(perFrame, n - i) }, (_, k) => token(i + k))));
}

describe('the workbench does not re-render on store changes it does not draw', () => {
  it('a job starting and ending, streamed tokens and a hover leave App (and its other children) alone', async () => {
    useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K' });
    // Async: what the panels start on mount (the cached-model list) settles inside act.
    await act(async () => dom.root.render(createElement(App)));
    const afterMount = renders.promptEditor;
    expect(afterMount).toBeGreaterThan(0);
    streamTokens(6, 2);
    act(() => useStore.getState().setFocusPosition(2));
    act(() => useStore.getState().setJob(null));
    expect(renders.promptEditor).toBe(afterMount);
    // …but App does re-render for what it draws: the active tab.
    act(() => useStore.getState().setView('generation'));
    expect(renders.promptEditor).toBe(afterMount + 1);
    expect(dom.host.querySelector('[data-testid="generation-view"]')).not.toBeNull();
  });
});

describe('Generation view while tokens stream', () => {
  it('shows the margin curve and holds the (hidden) output before the first generation, and keeps those elements as the tokens arrive', () => {
    act(() => useStore.getState().setGeneration({ maxNewTokens: 16 }));
    act(() => dom.root.render(createElement(GenerationView)));
    const curve = dom.host.querySelector('svg[data-testid="margin-curve"]');
    expect(curve).not.toBeNull();
    expect(curve!.querySelectorAll('circle')).toHaveLength(0);
    expect(dom.host.querySelector('.placeholder')?.textContent).toContain('Generate');
    const output = dom.host.querySelector('[data-testid="generation-output"]');
    const strip = dom.host.querySelector('ol.generated-tokens');
    expect(output?.closest('[hidden]')).not.toBeNull();
    expect(strip?.children).toHaveLength(0);
    streamTokens(5, 2);
    expect(dom.host.querySelector('svg[data-testid="margin-curve"]')).toBe(curve);
    expect(dom.host.querySelector('[data-testid="generation-output"]')).toBe(output);
    expect(dom.host.querySelector('ol.generated-tokens')).toBe(strip);
    expect(output!.closest('[hidden]')).toBeNull();
    expect(dom.host.querySelector('[data-testid="generation-stop"]')?.textContent).toBe('5 of 5 tokens…');
    expect([...curve!.querySelectorAll('circle')].map((c) => Number(c.getAttribute('data-y')))).toEqual([0, 1, 2, 3, 4].map((i) => token(i).margin));
    expect([...dom.host.querySelectorAll('[data-testid="generated-token"]')].map((li) => Number(li.getAttribute('data-id')))).toEqual([100, 101, 102, 103, 104]);
    expect(dom.host.querySelector('[data-testid="generated-text"]')?.textContent).toBe(' t0 t1 t2 t3 t4');
    expect(dom.host.querySelector('.placeholder')).toBeNull();
  });
});
