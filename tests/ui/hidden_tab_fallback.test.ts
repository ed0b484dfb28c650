// @vitest-environment happy-dom
/**
 * A tab shown only for some models (Expert routes: models with routers, app/views/registry.ts
 * shownFor) does not stay selected when a model without it loads: a fresh-user trial loaded qwen2
 * on the Expert routes tab and read "qwen2 has no routers" on a tab the guide says is not there.
 * The first view (the default) opens instead; the tab stays while the routed model is loaded.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';
import type { ModelInfo } from '../../workers/protocol';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
// App starts the worker and restores the last experiment on mount: not wanted here.
vi.mock('../../app/actions/experiment', async (orig) => ({ ...(await orig<object>()), startUp: vi.fn(), followExperiment: vi.fn() }));

const { useStore } = await import('../../app/store');
const { App } = await import('../../app/App');
const dom = domPerTest(useStore);

const info = (label: string, hookNames: string[]) => ({ label, modelType: label, nLayers: 1, nHeads: 1, dModel: 8, dVocab: 16, contextLength: 64, hookNames, hasChatTemplate: false, backend: { kind: 'cpu', description: 'CPU' }, byteTokens: [] }) as unknown as ModelInfo;

describe('a tab the new model does not show', () => {
  it('Expert routes stays selected for a model with routers and gives way to the Margin heatmap when a dense model loads', async () => {
    useStore.setState({ modelStatus: 'ready', modelLabel: 'mixtral-tiny', info: info('mixtral', ['blocks.0.hook_resid_pre', 'blocks.0.mlp.hook_router_logits']), view: 'routes' });
    await act(async () => dom.root.render(createElement(App)));
    expect(useStore.getState().view).toBe('routes');
    expect(dom.host.querySelector('[data-testid="tab-routes"]')?.getAttribute('aria-selected')).toBe('true');
    await act(async () => useStore.setState({ modelLabel: 'qwen2', info: info('qwen2', ['blocks.0.hook_resid_pre']) }));
    expect(useStore.getState().view).toBe('margins');
    expect(dom.host.querySelector('[data-testid="tab-routes"]')).toBeNull();
    expect(dom.host.querySelector('[data-testid="tab-margins"]')?.getAttribute('aria-selected')).toBe('true');
  });
});
