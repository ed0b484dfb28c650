import { describe, expect, it, vi } from 'vitest';
import { useStore } from '../../app/store';
import { currentExperiment, holdForPoster, releasePosterHold } from '../../app/actions/experiment';

vi.mock('virtual:bundled-models', () => ({ default: [] }));

/** Poster mode's first slide and the experiment it puts back on leaving are one capture (actions/experiment.ts). */
describe('poster mode holds the user’s experiment once', () => {
  it('the held experiment is returned (slide 0); holding again while held returns that same capture, not the slide loaded since', async () => {
    useStore.getState().setPrompt('My own experiment');
    const held = holdForPoster();
    expect(held).toEqual(currentExperiment());
    useStore.getState().setPrompt('A deck slide'); // a slide loaded while held
    expect(holdForPoster()).toBe(held);
    expect(held.prompt).toBe('My own experiment');
    await releasePosterHold(false);
    // released: the next poster mode holds what is open then
    expect(holdForPoster().prompt).toBe('A deck slide');
    await releasePosterHold(false);
  });
});
