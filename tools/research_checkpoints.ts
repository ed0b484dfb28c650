/**
 * Research-size checkpoints made at test or bench time, never committed: random weights with a real
 * config's shapes (tools/research_configs.ts) in HF layout, written once into
 * os.tmpdir()/branchpoint-research/<hash of the generator's sources>/<model> and reused by every
 * test file and benchmark after that. So far SmolLM2-135M (Llama): binary16 safetensors from
 * bench/smollm_random.ts (uniform ±1.7/√fan_in matrices, unit norms), with stories260K's tokenizer
 * files — the llama3_1 package's tokenizer has 128,256 tokens, not SmolLM2's 49,152, so it cannot
 * stand in; tests feed token ids directly.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { smolLM135MRandom, SMOLLM_135M } from '../bench/smollm_random';
import { RESEARCH_CONFIGS } from './research_configs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The cache folder: changes whenever the generator or the configs change. */
function cacheDir(): string {
  const h = createHash('sha256');
  for (const f of ['tools/research_checkpoints.ts', 'tools/research_configs.ts', 'bench/smollm_random.ts', 'tools/safetensors_write.ts']) h.update(fs.readFileSync(path.join(ROOT, f)));
  return path.join(os.tmpdir(), 'branchpoint-research', h.digest('hex').slice(0, 16));
}

/**
 * The folder of SmolLM2-135M with random weights (config.json with the real values, model.safetensors
 * in F16: 270 MB, tokenizer.json), built on first use (a few seconds), then reused.
 * @returns its absolute path.
 */
export function smolLM2Checkpoint(): string {
  return smolLM135MRandom(path.join(cacheDir(), 'smollm2-135m-f16'), RESEARCH_CONFIGS['smollm2-135m'] as unknown as typeof SMOLLM_135M);
}
