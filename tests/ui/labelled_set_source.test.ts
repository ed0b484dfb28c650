// @vitest-environment happy-dom
/**
 * Fresh-user trial (fitapply 4): Steering transfer's Example list kept showing "he vs she" after the
 * user opened happy_sad.json with the file button. The list shows the set loaded now: its example,
 * or "— from a file —" for a file, until the user picks another example to load.
 */
import { act, createElement } from 'react';
import { describe, expect, it } from 'vitest';
import { domPerTest } from './dom';

const { useStore } = await import('../../app/store');
const { LabelledSetSource } = await import('../../app/components/LabelledSetSource');
const dom = domPerTest(useStore);

const select = () => dom.host.querySelector('[data-testid="transfer-set-example"]') as HTMLSelectElement;
const shown = () => select().options[select().selectedIndex].textContent;

describe('the labelled set source', () => {
  it('shows "— from a file —" once a file is loaded, the example once one is, and the user\'s pick meanwhile', () => {
    act(() => dom.root.render(createElement(LabelledSetSource, { prefix: 'transfer-set' })));
    expect(shown()).toBe('he vs she (who the story is about)');
    act(() => useStore.getState().setProbeSettings({ source: 'happy_sad.json' })); // what loadProbeFile sets: the file's name
    expect(shown()).toBe('— from a file —');
    expect((dom.host.querySelector('[data-testid="transfer-set-load-example"]') as HTMLButtonElement).disabled).toBe(true);
    act(() => { select().value = 'steering/happy_sad.json'; select().dispatchEvent(new Event('change', { bubbles: true })); });
    expect(shown()).toBe('happy vs sad (story mood)');
    expect([...select().options].map((o) => o.textContent)).not.toContain('— from a file —');
    act(() => useStore.getState().setProbeSettings({ source: 'probes/he_she.json' })); // loadProbeExample: the example's path
    expect(shown()).toBe('he vs she (who the story is about)');
  });
});
