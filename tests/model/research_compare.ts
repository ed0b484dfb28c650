import { Engine } from '../../workers/engine/engine';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { referenceLogits, type ReferenceConfig } from './research_forward';
import type { Float64Weights } from './research_weights';

/** The engine's last-token logits on a checkpoint folder beside the float64 reference's. */
export interface ResearchComparison {
  /** max over the vocabulary of |engine − reference|, in logits (nats). */
  worst: number;
  /** max |reference|, for scale. */
  scale: number;
  argmax: number;
  refArgmax: number;
  /** The engine's load warnings. */
  warnings: string[];
  /** Seconds: the engine's load, its run, the reference forward. */
  seconds: { load: number; run: number; reference: number };
}

/**
 * Loads `dir` the way a user loads a local folder (NodeFiles, CPU backend, float32 weights), runs
 * `tokens` from position 0, disposes the engine (so only one copy of a 1B model is alive), then runs
 * the float64 reference on `weights` (the same file's bytes, decoded by tests/model/research_weights.ts)
 * and compares the last position's logits over the whole vocabulary.
 * @param probe called with the loaded engine before it is disposed (further checks on the same load).
 * @throws Error when the engine's vocabulary or layer count differ from the config's.
 */
export async function compareWithReference(dir: string, config: ReferenceConfig, weights: Float64Weights, tokens: readonly number[], probe?: (engine: Engine) => Promise<void>): Promise<ResearchComparison> {
  let t = performance.now();
  const engine = await Engine.load(new NodeFiles(dir), new CpuBackend());
  const load = (performance.now() - t) / 1000;
  if (engine.spec.dVocab !== config.vocab_size || engine.spec.nLayers !== config.num_hidden_layers) throw new Error(`engine spec ${engine.spec.dVocab} × ${engine.spec.nLayers} layers ≠ config ${config.vocab_size} × ${config.num_hidden_layers}`);
  const warnings = [...engine.loadWarnings];
  t = performance.now();
  const { logits } = await engine.run(tokens, { logits: 'last' });
  const run = (performance.now() - t) / 1000;
  try {
    await probe?.(engine);
  } finally {
    engine.dispose();
  }
  t = performance.now();
  const ref = referenceLogits(config, weights, tokens);
  const reference = (performance.now() - t) / 1000;
  let worst = 0, scale = 0, argmax = 0, refArgmax = 0;
  for (let i = 0; i < config.vocab_size; i++) {
    const d = Math.abs(logits[i] - ref[i]);
    worst = Number.isNaN(d) ? Infinity : Math.max(worst, d);
    scale = Math.max(scale, Math.abs(ref[i]));
    if (ref[i] > ref[refArgmax]) refArgmax = i;
    if (logits[i] > logits[argmax]) argmax = i;
  }
  return { worst, scale, argmax, refArgmax, warnings, seconds: { load, run, reference } };
}
