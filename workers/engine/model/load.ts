import type { Backend } from '../backend/backend';
import { architectureFor } from '../arch/registry';
import type { HFConfig } from '../arch/types';
import { openCheckpoint } from '../io/checkpoint';
import { RateMeter } from '../io/download';
import { readJson, type ModelFiles } from '../io/model_files';
import { Transformer } from './transformer';

export interface LoadProgress {
  stage: 'config' | 'weights' | 'upload' | 'tokenizer' | 'ready';
  /** Bytes of the checkpoint read so far and in all (stage 'weights'). */
  loaded?: number;
  total?: number;
  /** Recent download rate in bytes/s and the seconds left at that rate (stage 'weights'). */
  bytesPerSecond?: number;
  etaSeconds?: number;
}

/**
 * Reads config.json, picks the architecture, opens the checkpoint and uploads the weights.
 * @throws Error with a readable message for an unknown model_type (listing the supported ones),
 *   a missing/malformed config or checkpoint, or a tensor the architecture expects but cannot find.
 */
export async function loadTransformer(files: ModelFiles, backend: Backend, onProgress?: (p: LoadProgress) => void): Promise<{ config: HFConfig; model: Transformer }> {
  onProgress?.({ stage: 'config' });
  const config = await readJson(files, 'config.json');
  const arch = architectureFor(config.model_type);
  const spec = arch.spec(config);
  const meter = new RateMeter();
  const src = await openCheckpoint(files, (loaded, total) => onProgress?.({ stage: 'weights', ...meter.sample(loaded, total) }));
  onProgress?.({ stage: 'upload' });
  const weights = arch.weights(spec, src, (data, shape) => backend.upload(data, shape), config);
  return { config, model: new Transformer(backend, spec, weights) };
}
