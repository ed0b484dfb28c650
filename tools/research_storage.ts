/**
 * The research-size checkpoints of tools/research_checkpoints.ts by model and file storage, for the
 * tests and benchmarks that load each storage a user downloads: SmolLM2-135M as binary16
 * safetensors and as llama.cpp GGUF with Q8_0 / Q4_0 linear weights; Qwen3-0.6B, Llama-3.2-1B and
 * Gemma-3-1B as bfloat16 safetensors (the engine's GGUF reader takes Llama without RoPE scaling only).
 */
import { researchCheckpoint, smolLM2Checkpoint, smolLM2Gguf } from './research_checkpoints';
import type { ResearchModel } from './research_configs';

/** How a checkpoint is stored on disk. */
export type ResearchStorage = 'f16' | 'bf16' | 'gguf-q8_0' | 'gguf-q4_0';

/** The storages each research model is written in; the first is its safetensors form. */
export const RESEARCH_STORAGES: Record<ResearchModel, readonly ResearchStorage[]> = {
  'smollm2-135m': ['f16', 'gguf-q8_0', 'gguf-q4_0'],
  'qwen3-0.6b': ['bf16'],
  'llama-3.2-1b': ['bf16'],
  'gemma-3-1b': ['bf16'],
};

/**
 * The folder of `model` in `storage`, built on first use by tools/research_checkpoints.ts, then reused.
 * @returns its absolute path.
 * @throws Error for a storage RESEARCH_STORAGES does not list for the model.
 */
export function researchFolder(model: ResearchModel, storage: ResearchStorage): string {
  if (!RESEARCH_STORAGES[model].includes(storage)) throw new Error(`${model} is not written as ${storage} (it is written as ${RESEARCH_STORAGES[model].join(', ')})`);
  if (model !== 'smollm2-135m') return researchCheckpoint(model);
  return storage === 'f16' ? smolLM2Checkpoint() : smolLM2Gguf(storage === 'gguf-q8_0' ? 'q8_0' : 'q4_0');
}

/** The safetensors folder of `model` (the twin a GGUF folder is estimated and checked against). */
export function researchSafetensors(model: ResearchModel): string {
  return researchFolder(model, RESEARCH_STORAGES[model][0]);
}
