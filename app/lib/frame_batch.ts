/**
 * Collects items that arrive faster than the screen refreshes (streamed tokens) and hands them over
 * once per animation frame, so the store changes — and the views re-render — at most once a frame
 * however fast the worker streams. `flush()` hands over what is pending at once (before a final
 * result is stored, so it never overtakes its own tokens).
 */
export function frameBatcher<T>(deliver: (items: T[]) => void): { push(item: T): void; flush(): void } {
  let pending: T[] = [];
  let frame: number | null = null;
  const flush = () => {
    if (frame !== null) cancelAnimationFrame(frame);
    frame = null;
    if (pending.length === 0) return;
    const items = pending;
    pending = [];
    deliver(items);
  };
  return {
    push(item: T) {
      pending.push(item);
      if (frame === null) frame = requestAnimationFrame(flush);
    },
    flush,
  };
}
