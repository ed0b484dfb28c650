import type { Backend } from '../backend/backend';
import { WebGpuBackend } from '../backend/webgpu';
import { chooseNextToken } from './next_token';
import { RunContext } from './run_context';
import type { Transformer } from './transformer';

/**
 * The forward calls of the warm-up, as [first position, rows]: one of each kind of call generation
 * makes, since the kernels (and so the pipelines) depend on the row count and the context length —
 * a prompt of ≥ 5 rows (tiled matmul / 8-row dot kernels), of 2–4 rows (fused decode kernels in
 * blocks of 4), a one-row decode step over a short context (one-pass attention) and one at the
 * last position of the KV cache (split flash-decoding attention, where the adapter splits at all).
 * Calls that do not fit a short context are dropped; positions never overlap.
 */
export function warmUpCalls(contextLength: number): [pos0: number, n: number][] {
  const calls: [number, number][] = [];
  let pos = 0;
  for (const n of [5, 2, 1]) {
    if (pos + n > contextLength) continue;
    calls.push([pos, n]);
    pos += n;
  }
  if (contextLength - 1 >= pos) calls.push([contextLength - 1, 1]);
  return calls;
}

/**
 * Compiles, before the first generation, the GPU pipelines a generation uses: runs the forward
 * calls of warmUpCalls (token id 0 at every position, no hooks, no interventions) with the
 * device-side greedy next-token choice after each, and throws the results away. On a WebGPU
 * backend the first use of each kernel compiles its pipeline in the GPU process; on a software
 * adapter (SwiftShader, 2 cores) that is ~1 s of CPU which, during the first generation after a
 * load, starved the page's main thread (main-thread tasks of 50–900 ms wall time with < 25 ms of
 * CPU in them: bench/ui_longtasks.ts). Done while the model loads, the first generation streams
 * like later ones. The KV-cache rows it writes are overwritten by the next run before being read
 * (every run writes rows [pos0, pos0 + n) and reads only rows < pos0 + n that it or its own
 * prefix wrote), and Transformer.kvVersion moves, so no cached prefix (model/kv_prefix.ts) is
 * trusted across it. A no-op on the CPU backend (nothing to compile).
 * @returns the rows pushed through the model (0 when nothing ran).
 * @throws Error from the backend (a lost device) as the forward pass would.
 */
export async function warmUpGeneration(model: Transformer, backend: Backend): Promise<number> {
  if (!(backend instanceof WebGpuBackend)) return 0;
  const V = model.spec.dVocab;
  const rule = { temperature: 0, topK: 0, rand: () => 0, good: [0], bad: [Math.min(1, V - 1)] };
  let rows = 0;
  for (const [pos0, n] of warmUpCalls(model.contextLength)) {
    const ctx = new RunContext(backend, { pos0, n, nPrompt: n, step: 0 });
    const logits = model.forward(new Int32Array(n), ctx, 'last')!;
    try {
      await chooseNextToken(backend, logits, rule);
    } finally {
      backend.release(logits);
    }
    rows += n;
  }
  return rows;
}
