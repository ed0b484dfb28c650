/**
 * The research-size checkpoints of tools/research_checkpoints.ts in the other storages a user
 * downloads: the same weights as llama.cpp's model.gguf with the linear weights in Q8_0 or Q4_0
 * (tools/gguf_write.ts; embeddings and norms float32; Llama-family models only, as the engine's GGUF
 * reader) beside the generator's binary16 safetensors folder, written once into the same cache
 * folder (it changes whenever the generators change) and reused after that. Never committed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { llamaToGguf } from './gguf_write';
import { smolLM2Checkpoint } from './research_checkpoints';
import type { ResearchModel } from './research_configs';

/** How a checkpoint is stored on disk: binary16 safetensors, or GGUF with Q8_0 / Q4_0 linear weights. */
export type ResearchStorage = 'f16' | 'gguf-q8_0' | 'gguf-q4_0';

/** The storages of each research model this repository can write (GGUF: Llama family only). */
export const RESEARCH_STORAGES: Partial<Record<ResearchModel, readonly ResearchStorage[]>> = {
  'smollm2-135m': ['f16', 'gguf-q8_0', 'gguf-q4_0'],
};

/** The generator's own folder of `model` (binary16 safetensors, config.json, tokenizer files). */
function sourceFolder(model: ResearchModel): string {
  if (model === 'smollm2-135m') return smolLM2Checkpoint();
  throw new Error(`no generator for the research model "${model}" (tools/research_checkpoints.ts)`);
}

/**
 * The folder of `model` in `storage`, built on first use (GGUF: model.gguf and the tokenizer files,
 * no config.json — the engine reads the config from the GGUF metadata), then reused.
 * @returns its absolute path.
 * @throws Error for a storage RESEARCH_STORAGES does not list for the model.
 */
export function researchFolder(model: ResearchModel, storage: ResearchStorage): string {
  if (!RESEARCH_STORAGES[model]?.includes(storage)) throw new Error(`${model} is not written as ${storage} (RESEARCH_STORAGES: ${RESEARCH_STORAGES[model]?.join(', ') ?? 'none'})`);
  const src = sourceFolder(model);
  if (storage === 'f16') return src;
  const dir = path.join(path.dirname(src), `${path.basename(src)}-${storage}`);
  const done = path.join(dir, '.complete');
  if (fs.existsSync(done)) return dir;
  fs.mkdirSync(dir, { recursive: true });
  for (const f of fs.readdirSync(src)) if (/^(tokenizer.*|special_tokens_map)\.json$/.test(f)) fs.copyFileSync(path.join(src, f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, 'model.gguf'), llamaToGguf(src, storage === 'gguf-q8_0' ? 'q8_0' : 'q4_0'));
  fs.writeFileSync(done, '');
  return dir;
}
