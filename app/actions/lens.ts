import type { LensTopTokens } from '../../workers/protocol';
import { inOrder } from './worker';

type Want = { handle: number; layer: number; position: number; resolve: (t: LensTopTokens) => void; reject: (e: unknown) => void };

let inFlight = false;
let next: Want | null = null;

/**
 * The logit lens's top tokens at one cell of the analysis on display, computed by the worker on
 * demand (the analysis itself carries only the futures' margins). While one request runs, only the
 * latest cell asked for waits behind it: a pointer sweeping over the grid does not queue every cell;
 * the skipped requests never settle (their readouts have moved on).
 * @throws Error (through the promise) when the worker no longer holds the analysis.
 */
export function lensTop(handle: number, layer: number, position: number): Promise<LensTopTokens> {
  return new Promise((resolve, reject) => {
    next = { handle, layer, position, resolve, reject };
    if (!inFlight) void drain();
  });
}

async function drain(): Promise<void> {
  inFlight = true;
  while (next) {
    const w = next;
    next = null;
    try {
      w.resolve(await inOrder((api) => api.lensTop(w.handle, w.layer, w.position)));
    } catch (e) {
      w.reject(e);
    }
  }
  inFlight = false;
}
