// @vitest-environment happy-dom
/**
 * One error banner (fresh-user trial t3: a bad experiment file's notice and a job's error showed in
 * two styles at once, and the file's error stayed after a later successful Analyse). Job errors and
 * experiment notices render through the same Banner; an unreadable file's or link's notice is
 * cleared by the user's next successful Analyse, not by a restore's own rerun, a timer or a job start.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));

const { useStore } = await import('../../app/store');
const { ErrorBanner } = await import('../../app/components/ErrorBanner');
const { ExperimentBar } = await import('../../app/components/ExperimentBar');
const { openExperimentFile } = await import('../../app/actions/experiment');
const { keptAfterAnalyse } = await import('../../app/store/share');

const dom = domPerTest(useStore);

describe('errors show in one banner', () => {
  it('a job error and an experiment notice have the same markup: role alert, what, why, × to dismiss', async () => {
    await act(() => openExperimentFile(new File(['{"prompt": 3'], 'broken.json', { type: 'application/json' })));
    act(() => useStore.getState().setFailure({ what: 'Could not analyse the prompt', why: 'the bad future is empty: …' }));
    act(() => dom.root.render(createElement('div', null, createElement(ExperimentBar), createElement(ErrorBanner))));
    const banners = [...dom.host.querySelectorAll('[role="alert"]')];
    expect(banners.map((b) => b.getAttribute('data-testid'))).toEqual(['experiment-notice', 'error-banner']);
    const shape = (b: Element) => [b.className, b.querySelector('strong')?.textContent !== '', b.querySelector('p') !== null, b.querySelector('button[aria-label="dismiss"]')?.textContent];
    expect(shape(banners[0])).toEqual(shape(banners[1]));
    expect(banners[0].className).toBe('error-banner');
    expect(dom.host.querySelector('[data-testid="experiment-notice-what"]')!.textContent).toBe('broken.json could not be opened');
    act(() => banners[0].querySelector<HTMLButtonElement>('button[aria-label="dismiss"]')!.click());
    expect(useStore.getState().experimentNotice).toBeNull();
    expect(dom.host.querySelectorAll('[role="alert"]')).toHaveLength(1);
  });

  it('an unreadable file\'s notice goes with the user\'s next successful Analyse; a restored experiment\'s stays, and so does any during a restore\'s rerun', async () => {
    await openExperimentFile(new File(['not json'], 'x.json'));
    const unread = useStore.getState().experimentNotice!;
    expect(unread.unread).toBe(true);
    expect(keptAfterAnalyse(unread, false)).toBeNull();
    expect(keptAfterAnalyse(unread, true)).toBe(unread);
    const restored = { what: 'The link does not carry every vector', why: 'Left out (too large for a link): CAA happy vs sad.' };
    expect(keptAfterAnalyse(restored, false)).toBe(restored);
    expect(keptAfterAnalyse(null, false)).toBeNull();
  });
});
