// @vitest-environment happy-dom
/**
 * The chat-turn editor's enable_thinking box (issue #27): enabled only when the loaded chat template
 * reads enable_thinking (ModelInfo.templateReadsThinking), and then it sets the experiment's
 * enableThinking (unset shows ticked: Qwen3's default thinks); otherwise it is disabled, a line says
 * why, and clicking it changes nothing. Store and DOM only; the worker is mocked (tokenize never answers).
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
vi.mock('../../app/actions/worker', async (orig) => ({ ...(await orig<object>()), inOrder: vi.fn(() => new Promise(() => undefined)) }));

const { useStore } = await import('../../app/store');
const { PromptEditor } = await import('../../app/components/PromptEditor');
const dom = domPerTest(useStore);
const box = () => dom.host.querySelector<HTMLInputElement>('[data-testid="enable-thinking"]')!;
const hint = () => dom.host.querySelector('[data-testid="enable-thinking-hint"]')?.textContent ?? '';

describe('the enable_thinking box of the chat turn', () => {
  it('a template that reads it (Qwen3): enabled, ticked while unset; clicks set false, then true', () => {
    act(() => useStore.setState({ modelStatus: 'ready', info: { label: 'qwen3', hasChatTemplate: true, templateReadsThinking: true } as never, chatTemplate: true, enableThinking: undefined }));
    act(() => dom.root.render(createElement(PromptEditor)));
    expect(box().disabled).toBe(false);
    expect(box().checked).toBe(true);
    expect(hint()).toContain("not set: the template's default");
    act(() => box().click());
    expect(useStore.getState().enableThinking).toBe(false);
    expect(box().checked).toBe(false);
    expect(hint()).toBe('Off renders the empty <think></think> block after the generation prompt, so the answer starts at once.');
    act(() => box().click());
    expect(useStore.getState().enableThinking).toBe(true);
  });

  it('a template that does not read it: disabled with the reason, and the experiment is unchanged', () => {
    act(() => useStore.setState({ modelStatus: 'ready', info: { label: 'llama', hasChatTemplate: true, templateReadsThinking: false } as never, chatTemplate: true, enableThinking: false }));
    act(() => dom.root.render(createElement(PromptEditor)));
    expect(box().disabled).toBe(true);
    expect(hint()).toBe("This model's chat template does not read enable_thinking (Qwen3's does), so the setting would change nothing.");
    act(() => box().click());
    expect(useStore.getState().enableThinking).toBe(false);
  });

  it('a tokenizer without a chat template: the toggle is disabled and says why beside it (not only in a tooltip), and the chat-turn editor is not drawn', () => {
    act(() => useStore.setState({ modelStatus: 'ready', info: { label: 'stories260K', hasChatTemplate: false, templateReadsThinking: false } as never, chatTemplate: false }));
    act(() => dom.root.render(createElement(PromptEditor)));
    expect(dom.host.querySelector<HTMLInputElement>('[data-testid="chat-template"]')!.disabled).toBe(true);
    expect(dom.host.querySelector('[data-testid="chat-template-why"]')?.textContent).toContain("stories260K's tokenizer has no chat template");
    expect(dom.host.querySelector('[data-testid="enable-thinking"]')).toBeNull();
    act(() => useStore.setState({ info: { label: 'qwen3', hasChatTemplate: true, templateReadsThinking: true } as never }));
    expect(dom.host.querySelector('[data-testid="chat-template-why"]')).toBeNull();
  });
});
