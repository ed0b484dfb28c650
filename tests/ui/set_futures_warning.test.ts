// @vitest-environment happy-dom
/**
 * A contrastive set written for other futures than the experiment's is said so in the Vectors tab
 * (issue 29 item 12: the happy/sad set used with the experiment's " Tom" vs " Lily" silently
 * swamped the lens); the warning goes once the experiment uses the set's futures.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
vi.mock('../../app/actions/vectors', async (orig) => ({ ...(await orig<object>()), loadDefaultSet: vi.fn(async () => undefined) }));

const { useStore } = await import('../../app/store');
const { VectorLibraryView } = await import('../../app/views/VectorLibraryView');
const dom = domPerTest(useStore);

describe('a prompt set for other futures', () => {
  it('warns while the experiment measures other futures than the set was written for, and not after "Use its prompt and futures"', () => {
    useStore.setState({ contrastSet: { name: 'happy vs sad', positive: ['I am happy'], negative: ['I am sad'], suggested: { prompt: 'The little girl felt very', good: ' happy', bad: ' sad', alpha: 6 } } } as never);
    act(() => dom.root.render(createElement(VectorLibraryView)));
    const warning = () => dom.host.querySelector('[data-testid="set-futures-differ"]');
    expect(warning()?.textContent).toContain('“ happy” vs “ sad”');
    expect(warning()?.textContent).toContain('“ Tom” vs “ Lily”');
    act(() => (dom.host.querySelector('[data-testid="use-suggested"]') as HTMLButtonElement).click());
    expect(warning()).toBeNull();
  });
});
