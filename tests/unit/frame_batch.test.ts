import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { frameBatcher } from '../../app/lib/frame_batch';

/** Streamed tokens reach the store once per animation frame (issue 11: the UI re-renders at most once a frame). */
describe('frameBatcher', () => {
  let frames: Map<number, FrameRequestCallback>;
  let next: number;
  const runFrame = () => { const due = [...frames.values()]; frames.clear(); for (const f of due) f(0); };
  beforeEach(() => {
    frames = new Map();
    next = 1;
    vi.stubGlobal('requestAnimationFrame', (f: FrameRequestCallback) => { frames.set(next, f); return next++; });
    vi.stubGlobal('cancelAnimationFrame', (id: number) => { frames.delete(id); });
  });
  afterEach(() => vi.unstubAllGlobals());

  it('hands over everything pushed between two frames in one delivery, in order, with one frame requested', () => {
    const got: number[][] = [];
    const b = frameBatcher<number>((xs) => got.push(xs));
    for (const x of [1, 2, 3]) b.push(x);
    expect(got).toEqual([]);
    expect(frames.size).toBe(1);
    runFrame();
    expect(got).toEqual([[1, 2, 3]]);
    b.push(4);
    b.push(5);
    runFrame();
    expect(got).toEqual([[1, 2, 3], [4, 5]]);
    runFrame();
    expect(got).toHaveLength(2);
  });

  it('flush() delivers at once and cancels the frame; with nothing pending it delivers nothing', () => {
    const got: string[][] = [];
    const b = frameBatcher<string>((xs) => got.push(xs));
    b.flush();
    expect(got).toEqual([]);
    b.push('a');
    b.flush();
    expect(got).toEqual([['a']]);
    expect(frames.size).toBe(0);
    b.push('b');
    expect(frames.size).toBe(1);
    runFrame();
    expect(got).toEqual([['a'], ['b']]);
  });
});
