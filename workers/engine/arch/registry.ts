import type { Architecture } from './types';
import { gemma2 } from './gemma2';
import { gemma3Text } from './gemma3';
import { gpt2 } from './gpt2';
import { gptNeox } from './gpt_neox';
import { llama } from './llama';
import { mixtral } from './mixtral';
import { olmoe } from './olmoe';
import { phi3 } from './phi3';
import { qwen2 } from './qwen2';
import { qwen2Moe } from './qwen2_moe';
import { qwen3 } from './qwen3';

/** Every supported architecture; adding a family = one file + one line here + its fixture test. */
export const ARCHITECTURES: readonly Architecture[] = [llama, qwen2, qwen3, phi3, gpt2, gptNeox, gemma2, gemma3Text, mixtral, qwen2Moe, olmoe];

/** HF model_type values the engine can run. */
export const SUPPORTED_MODEL_TYPES: readonly string[] = ARCHITECTURES.flatMap((a) => a.modelTypes);

/**
 * Finds the architecture for a config's `model_type`.
 * @throws Error listing the supported model types when it is unknown or missing.
 */
export function architectureFor(modelType: unknown): Architecture {
  const arch = ARCHITECTURES.find((a) => a.modelTypes.includes(String(modelType)));
  if (!arch) {
    throw new Error(`unsupported model_type "${String(modelType)}": this engine runs ${SUPPORTED_MODEL_TYPES.join(', ')}`);
  }
  return arch;
}
