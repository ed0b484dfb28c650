// @vitest-environment happy-dom
/**
 * The experiment panel's inputs when something is wrong with them, on the components themselves:
 * an empty future's error is said once (under the field while typing; only in the banner once
 * Analyse failed with it, the field outlined), and a prompt longer than the context keeps its
 * token strip (the tokens that fit and how many lie past the context) — trials saw the error
 * twice, and the strip and future chips vanish with a too-long prompt.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';
import type { ModelInfo } from '../../workers/protocol';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
const { useStore } = await import('../../app/store');
const { FuturesEditor } = await import('../../app/components/FuturesEditor');
const { PromptTokens } = await import('../../app/components/PromptTokens');
const { futureKey } = await import('../../app/lib/futures');

const dom = domPerTest(useStore);

const $ = (id: string) => dom.host.querySelector(`[data-testid="${id}"]`);
// The engine's wording (engine.ts resolveFuture).
const EMPTY = 'the bad future is empty: each future needs at least one token (text, or token ids)';

describe('an empty future is named once', () => {
  it('under the field while typing; in the banner alone once Analyse failed with it (the field outlined); under the field again when the banner is closed', () => {
    const s = useStore.getState();
    const bad = { mode: 'text' as const, value: '' };
    const resolved = { sequences: [[393]], tokens: [[' happy']], firstIds: [393] };
    act(() => {
      s.setFuture('bad', bad);
      s.setFutureChips({ good: { key: futureKey(s, s.good), resolved }, bad: { key: futureKey(s, bad), error: EMPTY } });
    });
    act(() => dom.root.render(createElement(FuturesEditor)));
    expect($('bad-unresolved')?.textContent).toBe(EMPTY);
    expect($('good-resolved')).not.toBeNull();
    expect($('bad-future')?.getAttribute('aria-invalid')).toBe('true');

    act(() => s.setFailure({ what: 'Could not analyse the prompt', why: EMPTY }));
    expect($('bad-unresolved')).toBeNull();
    expect(dom.host.textContent).not.toContain(EMPTY);
    expect($('bad-future')?.classList.contains('invalid')).toBe(true);
    expect($('bad-future')?.getAttribute('title')).toBe(EMPTY);
    expect($('good-future')?.classList.contains('invalid')).toBe(false);

    act(() => s.setFailure({ what: 'Could not generate', why: 'another reason' }));
    expect($('bad-unresolved')?.textContent).toBe(EMPTY);
    act(() => s.setFailure(null));
    expect($('bad-unresolved')?.textContent).toBe(EMPTY);
  });
});

describe('a prompt longer than the context keeps its token strip', () => {
  it('shows the tokens that fit and how many lie past the context', () => {
    const n = 530;
    act(() => useStore.setState({
      info: { contextLength: 512 } as ModelInfo,
      promptTokens: { ids: Array.from({ length: n }, (_, i) => 100 + (i % 50)), tokens: Array.from({ length: n }, (_, i) => ` t${i}`) },
    }));
    act(() => dom.root.render(createElement(PromptTokens)));
    expect($('token-strip')?.querySelectorAll('li')).toHaveLength(512);
    expect($('token-511')).not.toBeNull();
    expect($('token-512')).toBeNull();
    expect(dom.host.querySelector('.strip-title')?.textContent).toContain(`(${n};`);
    expect($('tokens-past-context')?.textContent).toContain(`${n - 512} more tokens past the model's 512-token context`);
    // A prompt that fits has no such line.
    act(() => useStore.setState({ promptTokens: { ids: [1, 2], tokens: ['<s>', ' a'] } }));
    expect($('token-strip')?.querySelectorAll('li')).toHaveLength(2);
    expect($('tokens-past-context')).toBeNull();
  });
});
