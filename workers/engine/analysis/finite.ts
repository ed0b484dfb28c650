/**
 * Where the first NaN or ±Infinity of an array is: one plain loop, used on every weight tensor a
 * load reads (safetensors, GGUF, SAE files) and on every result a run returns. A plain loop, not
 * `Array.prototype.findIndex` with a closure: over a Float32Array that ran 6–7× slower in V8
 * (2^24 values: 650–810 ms against 96–150 ms, Node 22, 2026-12-02, load 13–14), which on a
 * 0.6B-parameter checkpoint was tens of seconds of a load.
 */

/** Index of the first NaN or ±Infinity in `a`, or −1 when every value is finite. */
export function firstNonFinite(a: ArrayLike<number>): number {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return i;
  return -1;
}
