// @vitest-environment happy-dom
/**
 * Every view says in one line whether the experiment's intervention list applies to what it runs
 * (issue 29 item 4: Patching ran without the enabled interventions and said nothing). The line is a
 * column of the view registry (app/views/registry.ts `interventions`), drawn above every view.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
const { useStore } = await import('../../app/store');
const { VIEWS } = await import('../../app/views/registry');
const { ViewInterventionsLine } = await import('../../app/components/ViewInterventionsLine');
const dom = domPerTest(useStore);

const add = { enabled: true, hook: 'blocks.3.hook_resid_post', type: 'add' as const, dose: 6, rotateBy: 'theta' as const, mode: 'zero' as const, vectorId: null, source: '', head: null, positions: 'all' as const, steps: null };

describe('the interventions line of every view', () => {
  it('every registered view states whether the list applies, in one line', () => {
    for (const v of VIEWS) {
      expect(['yes', 'no', 'option'], v.name).toContain(v.interventions.applies);
      expect(v.interventions.line, v.name).toMatch(/^[A-Z].*interventions.*\.$/);
      expect(v.interventions.line.includes('\n'), v.name).toBe(false);
      expect(/without/.test(v.interventions.line), `${v.name}: a view the list does not apply to says "without"`).toBe(v.interventions.applies !== 'yes');
    }
  });

  it('Patching says it runs without the enabled interventions, and how many are on', () => {
    useStore.setState({ interventions: [{ ...add, id: 1 }, { ...add, id: 2, enabled: false }] });
    act(() => dom.root.render(createElement(ViewInterventionsLine, { view: 'patching' })));
    const p = dom.host.querySelector('[data-testid="view-interventions"]')!;
    expect(p.getAttribute('data-applies')).toBe('no');
    expect(p.textContent).toContain('Runs without the interventions of the list');
    expect(p.textContent).toContain('(1 enabled now.)');
    expect(p.className).toContain('warn');
  });

  it('a view that runs with the interventions says so when none is enabled (its "steered" run is the unsteered one)', () => {
    useStore.setState({ interventions: [{ ...add, id: 1, enabled: false }] });
    act(() => dom.root.render(createElement(ViewInterventionsLine, { view: 'margins' })));
    const p = dom.host.querySelector('[data-testid="view-interventions"]')!;
    expect(p.textContent).toContain('None is enabled now: the run is unsteered.');
    act(() => useStore.setState({ interventions: [{ ...add, id: 1 }] }));
    expect(p.textContent).toContain('(1 enabled now.)');
    expect(p.textContent).not.toContain('None is enabled');
    act(() => dom.root.render(createElement(ViewInterventionsLine, { view: 'patching' })));
    act(() => useStore.setState({ interventions: [] }));
    expect(dom.host.textContent).toContain('Runs without the interventions of the list');
    expect(dom.host.textContent).not.toContain('None is enabled');
  });

  it('with none enabled, only views that run the enabled ones say the run is unsteered: the window runs the one picked, Attribution, Side effects, Mechanisms and SAE run none (fitapply 5)', () => {
    useStore.setState({ interventions: [{ ...add, id: 1, enabled: false }] });
    const text = (view: Parameters<typeof ViewInterventionsLine>[0]['view']) => {
      act(() => dom.root.render(createElement(ViewInterventionsLine, { view })));
      return dom.host.querySelector('[data-testid="view-interventions"]')!.textContent!;
    };
    expect(text('window')).toBe('Switches the one picked of the interventions (enabled or not), or every enabled one, on from each start step: the steps before run without them.');
    for (const v of ['attribution', 'side-effects', 'mechanisms', 'sae', 'probe', 'branches'] as const) expect(text(v), v).not.toContain('None is enabled');
    for (const v of ['margins', 'generation', 'batch'] as const) expect(text(v), v).toContain('(None is enabled now: the run is unsteered.)');
    // the registry's 'applies' against what the view runs: these four send no interventions in their requests
    for (const v of ['attribution', 'side-effects', 'mechanisms', 'sae'] as const) expect(VIEWS.find((x) => x.name === v)!.interventions.applies, v).toBe('no');
    expect(VIEWS.find((x) => x.name === 'window')!.interventions.applies).toBe('option');
  });

  it('App draws the line above the active view', async () => {
    const { readFileSync } = await import('node:fs');
    expect(readFileSync('app/App.tsx', 'utf8')).toMatch(/<ViewInterventionsLine view=\{view\} \/>\s*<ActiveView view=\{view\} \/>/);
  });
});
