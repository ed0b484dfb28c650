// @vitest-environment happy-dom
/**
 * Fresh-user trial (trialfix2 3): a saved experiment carried a system prompt and tools from an
 * earlier chat-template session while the chat template was off on stories260K, and the page showed
 * neither. Now one line under the prompt says so (and that they are not used), with Clear; with the
 * template on they are in the chat-turn editor and the line is gone; nothing is dropped without Clear.
 * Store and DOM only; the worker is mocked (tokenize never answers).
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
vi.mock('../../app/actions/worker', async (orig) => ({ ...(await orig<object>()), inOrder: vi.fn(() => new Promise(() => undefined)) }));

const { useStore } = await import('../../app/store');
const { PromptEditor } = await import('../../app/components/PromptEditor');
const dom = domPerTest(useStore);
const q = (id: string) => dom.host.querySelector(`[data-testid="${id}"]`);
const TOOL = { type: 'function', function: { name: 'get_weather', description: 'weather', parameters: { type: 'object', properties: {} } } } as never;

describe('a system prompt and tools the prompt does not use', () => {
  it('stories260K (no template): one line names them and says they are not used; Clear empties both', () => {
    act(() => useStore.setState({ modelStatus: 'ready', info: { label: 'stories260K', hasChatTemplate: false } as never, chatTemplate: false, system: 'You are a pirate.', tools: [TOOL, TOOL] }));
    act(() => dom.root.render(createElement(PromptEditor)));
    expect(q('unused-chat-fields')?.textContent).toContain('This experiment holds a system prompt and 2 tools from a chat-template session: not used while the chat template is off.');
    expect(useStore.getState().system).toBe('You are a pirate.'); // shown, not dropped
    act(() => (q('unused-chat-fields-clear') as HTMLButtonElement).click());
    expect(useStore.getState().system).toBeUndefined();
    expect(useStore.getState().tools).toEqual([]);
    expect(q('unused-chat-fields')).toBeNull();
  });

  it('template switched off on a model that has one: tools alone are named; switched on, the line goes and they are kept', () => {
    act(() => useStore.setState({ modelStatus: 'ready', info: { label: 'qwen', hasChatTemplate: true } as never, chatTemplate: false, system: undefined, tools: [TOOL] }));
    act(() => dom.root.render(createElement(PromptEditor)));
    expect(q('unused-chat-fields')?.textContent).toMatch(/^This experiment holds 1 tool from a chat-template session/);
    act(() => useStore.getState().setChatTemplate(true));
    expect(q('unused-chat-fields')).toBeNull();
    expect(useStore.getState().tools).toEqual([TOOL]);
  });

  it('nothing held: no line', () => {
    act(() => useStore.setState({ modelStatus: 'ready', info: { label: 'stories260K', hasChatTemplate: false } as never, chatTemplate: false, system: undefined, tools: [] }));
    act(() => dom.root.render(createElement(PromptEditor)));
    expect(q('unused-chat-fields')).toBeNull();
  });
});
