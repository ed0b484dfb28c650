/**
 * Curated Hub models the workbench offers in its picker, smallest first. Every entry runs on one
 * of the engine's architectures (gpt2, gpt_neox, llama, qwen2, qwen3, gemma2).
 * Parameter counts include the embeddings; sizes are the safetensors download, approximate (a
 * header-only estimate — workers/engine/model/estimate.ts — gives exact numbers before a load).
 * Licences are the Hub's `license` tags of each repo.
 */
export interface CatalogEntry {
  /** Hub repo id (org/name). */
  repo: string;
  /** Short display name. */
  label: string;
  /** Number of parameters (approximate). */
  params: number;
  /** Download size of the safetensors files in bytes (approximate). */
  approxBytes: number;
  /** Hub licence tag: mit, apache-2.0, llama3.2, gemma. */
  licence: string;
  /** Gated on the Hub: the user must accept the licence there and paste an access token. */
  gated: boolean;
  /** Instruction-tuned with a chat template. */
  chat: boolean;
}

const MB = 1e6, GB = 1e9;

export const CATALOG: readonly CatalogEntry[] = [
  { repo: 'EleutherAI/pythia-70m', label: 'Pythia 70M', params: 70e6, approxBytes: 166 * MB, licence: 'apache-2.0', gated: false, chat: false },
  { repo: 'openai-community/gpt2', label: 'GPT-2 small (124M)', params: 124e6, approxBytes: 548 * MB, licence: 'mit', gated: false, chat: false },
  { repo: 'HuggingFaceTB/SmolLM2-135M-Instruct', label: 'SmolLM2 135M Instruct', params: 135e6, approxBytes: 269 * MB, licence: 'apache-2.0', gated: false, chat: true },
  { repo: 'EleutherAI/pythia-160m', label: 'Pythia 160M', params: 162e6, approxBytes: 375 * MB, licence: 'apache-2.0', gated: false, chat: false },
  { repo: 'HuggingFaceTB/SmolLM2-360M-Instruct', label: 'SmolLM2 360M Instruct', params: 362e6, approxBytes: 724 * MB, licence: 'apache-2.0', gated: false, chat: true },
  { repo: 'Qwen/Qwen2.5-0.5B-Instruct', label: 'Qwen2.5 0.5B Instruct', params: 494e6, approxBytes: 988 * MB, licence: 'apache-2.0', gated: false, chat: true },
  { repo: 'Qwen/Qwen3-0.6B', label: 'Qwen3 0.6B', params: 596e6, approxBytes: 1.5 * GB, licence: 'apache-2.0', gated: false, chat: true },
  { repo: 'meta-llama/Llama-3.2-1B-Instruct', label: 'Llama 3.2 1B Instruct', params: 1.24e9, approxBytes: 2.47 * GB, licence: 'llama3.2', gated: true, chat: true },
  { repo: 'google/gemma-2-2b-it', label: 'Gemma 2 2B it', params: 2.61e9, approxBytes: 5.23 * GB, licence: 'gemma', gated: true, chat: true },
];

/** The catalog entry for a repo id, if curated. */
export function catalogEntry(repo: string): CatalogEntry | undefined {
  return CATALOG.find((e) => e.repo === repo);
}
