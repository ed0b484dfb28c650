/**
 * Will this SAE fit? Answered before its weights are fetched (sizes from the safetensors header,
 * or the .npz's file size), against the same DeviceLimits a model load uses (model/estimate.ts).
 */
import { ACTIVATION_TOKENS, type DeviceLimits } from '../model/estimate';
import { formatBytes } from '../io/bytes';
import type { ModelFiles } from '../io/model_files';
import { estimateSaeFiles } from './files';
import { saeMemoryBytes } from './sae';

export interface SaeEstimate {
  /** d_in, d_sae from the header (undefined for an .npz before it is read). */
  dIn?: number;
  dSae?: number;
  fileBytes: number;
  /** Device bytes of the loaded SAE plus an encode of ACTIVATION_TOKENS positions (saeMemoryBytes); for an .npz, the file size plus its share of activations is assumed. */
  totalBytes: number;
}

/**
 * Sizes an SAE and refuses it when it would not fit `limits.memoryBudget` or one row of W_enc/W_dec
 * exceeds the buffer limits.
 * @param reserved bytes already in use (the loaded model), counted against the budget.
 * @throws Error naming the SAE, its need and the budget; readSae's errors for a missing layout.
 */
export async function assertSaeFits(files: ModelFiles, path: string, limits: DeviceLimits, reserved = 0): Promise<SaeEstimate> {
  const f = await estimateSaeFiles(files, path);
  const totalBytes = f.dIn && f.dSae ? saeMemoryBytes(f.dIn, f.dSae, ACTIVATION_TOKENS).totalBytes : f.fileBytes * 1.1;
  const label = path === '' ? files.label : `${files.label}/${path}`;
  const rowBytes = 4 * Math.max(f.dIn ?? 0, f.dSae ?? 0);
  if (rowBytes > Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize)) {
    throw new Error(`${label}: one row of its weights is ${formatBytes(rowBytes)}, larger than the buffer limits of ${limits.device}`);
  }
  if (totalBytes + reserved > limits.memoryBudget) {
    const dims = f.dIn && f.dSae ? ` (d_in ${f.dIn} × d_sae ${f.dSae}, float32, with an encode of ${ACTIVATION_TOKENS} tokens)` : '';
    throw new Error(`${label} needs ${formatBytes(totalBytes)}${dims}${reserved ? ` besides the ${formatBytes(reserved)} in use` : ''}; ${limits.device} allows ${formatBytes(limits.memoryBudget)}`);
  }
  return { ...f, totalBytes };
}
