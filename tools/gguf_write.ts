/**
 * A small GGUF writer for tests and experiments: converts a model folder in HF layout
 * (config.json + model.safetensors; Llama, Mixtral, Qwen3, Gemma 2, Gemma 3 text) into
 * `model.gguf` the way llama.cpp's convert_hf_to_gguf.py lays it out, with the linear weights as
 * Q8_0, Q4_0, F16 or F32.
 *
 *   npx tsx tools/gguf_write.ts <hf-folder> <out.gguf> [--type q8_0|q4_0|f16|f32] [--embed f32|f16]
 *
 * The file (GGUF version 3, little-endian; https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
 *   "GGUF" magic, u32 version = 3, u64 tensor_count, u64 kv_count,
 *   kv_count × (string key, u32 value type, value)   (string = u64 length + UTF-8 bytes;
 *                                                     types used: 4 UINT32, 6 FLOAT32, 8 STRING),
 *   tensor_count × (string name, u32 n_dims, n_dims × u64 ne (ne[0] = the contiguous axis, i.e.
 *                   HF shape reversed), u32 GGML type, u64 offset into the data section),
 *   zero padding to general.alignment (32), then the tensor data, each tensor at an offset that is a
 *   multiple of 32. GGML types: 0 F32, 1 F16, 2 Q4_0 (18-byte blocks), 8 Q8_0 (34-byte blocks).
 * Metadata (io/gguf_arch.ts reads it back): general.architecture ("llama" for Llama and Mixtral,
 * "qwen3", "gemma2", "gemma3"), general.alignment, {arch}.{block_count, embedding_length,
 * feed_forward_length, context_length, attention.head_count, attention.head_count_kv,
 * attention.key_length, attention.value_length, attention.layer_norm_rms_epsilon}, the RoPE base
 * ({arch}.rope.freq_base; Gemma 3 also rope.freq_base_swa; Gemma 2 none, as the converter), linear
 * RoPE scaling as {arch}.rope.scaling.type / .factor, Gemma's attention.sliding_window and
 * soft-caps, tokenizer.ggml.{bos,eos}_token_id when config.json has them. (No tokenizer vocabulary:
 * the engine reads tokenizer.json beside the file.)
 * Tensors: llama.cpp names (io/gguf_arch.ts); Llama's attn_q / attn_k rows permuted as
 * LlamaModel.permute does (Qwen3 and Gemma use NEOX RoPE: no permutation); Llama 3's rope_scaling
 * "llama3" as a rope_freqs.weight tensor of per-frequency divisors (F32); Gemma's norm weights
 * stored as 1 + w (the converter's norm shift); norms F32; the embedding (and an untied output)
 * F32 or --embed f16; a linear weight whose rows are not a multiple of 32 values is written F32
 * (llama.cpp falls back the same way, to F16 or F32).
 * Mixtral folders are written as llama.cpp writes them: "llama" with llama.expert_count and
 * llama.expert_used_count, the router ffn_gate_inp F32 (llama-quantize leaves it so), and each
 * layer's experts stacked into ffn_gate_exps / ffn_up_exps / ffn_down_exps [n_experts, rows, cols]
 * in expert order.
 * A config llama.cpp's layout cannot carry is refused (a Gemma query_pre_attn_scalar other than
 * the one llama.cpp derives, a Gemma 3 local/global pattern other than 5:1, a Gemma 2 RoPE base
 * other than 10000).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { packF16 } from '../workers/engine/backend/f16';
import { quantise, QK, toGgmlBlocks } from '../workers/engine/backend/quant';
import { ggufExpertName, ggufName, ropeRowOrder } from '../workers/engine/io/gguf';
import { GGUF_FAMILIES } from '../workers/engine/io/gguf_arch';
import { decodeTensor, parseSafetensors } from '../workers/engine/io/safetensors';

export type GgufTensorType = 'f32' | 'f16' | 'q8_0' | 'q4_0';
const GGML_TYPE: Record<GgufTensorType, number> = { f32: 0, f16: 1, q4_0: 2, q8_0: 8 };
const ALIGN = 32;

type Value = { u32: number } | { f32: number } | { str: string };

/** Byte writer with little-endian helpers. */
class Out {
  private parts: Uint8Array[] = [];
  length = 0;
  bytes(b: Uint8Array): void { this.parts.push(b); this.length += b.length; }
  private num(n: number, set: (v: DataView) => void): void { const b = new Uint8Array(n); set(new DataView(b.buffer)); this.bytes(b); }
  u32(v: number): void { this.num(4, (d) => d.setUint32(0, v, true)); }
  u64(v: number): void { this.num(8, (d) => d.setBigUint64(0, BigInt(v), true)); }
  f32(v: number): void { this.num(4, (d) => d.setFloat32(0, v, true)); }
  str(s: string): void { const b = new TextEncoder().encode(s); this.u64(b.length); this.bytes(b); }
  pad(): void { this.bytes(new Uint8Array((ALIGN - (this.length % ALIGN)) % ALIGN)); }
  concat(): Uint8Array {
    const out = new Uint8Array(this.length);
    let o = 0;
    for (const p of this.parts) { out.set(p, o); o += p.length; }
    return out;
  }
}

/** One tensor to write: llama.cpp name, HF shape, and its bytes in `type`. */
export interface GgufTensor { name: string; shape: number[]; type: GgufTensorType; data: Uint8Array }

/** Serialises metadata and tensors as a GGUF v3 file (layout in the module comment). */
export function writeGguf(metadata: Record<string, Value>, tensors: readonly GgufTensor[]): Uint8Array {
  const out = new Out();
  out.bytes(new TextEncoder().encode('GGUF'));
  out.u32(3);
  out.u64(tensors.length);
  out.u64(Object.keys(metadata).length);
  for (const [key, v] of Object.entries(metadata)) {
    out.str(key);
    if ('u32' in v) { out.u32(4); out.u32(v.u32); } else if ('f32' in v) { out.u32(6); out.f32(v.f32); } else { out.u32(8); out.str(v.str); }
  }
  let offset = 0;
  const offsets = tensors.map((t) => { const o = offset; offset += Math.ceil(t.data.length / ALIGN) * ALIGN; return o; });
  tensors.forEach((t, i) => {
    out.str(t.name);
    out.u32(t.shape.length);
    for (const d of [...t.shape].reverse()) out.u64(d);
    out.u32(GGML_TYPE[t.type]);
    out.u64(offsets[i]);
  });
  out.pad();
  for (const t of tensors) { out.bytes(t.data); out.pad(); }
  return out.concat();
}

/** Bytes of float32 values in `type` (f32, f16, or ggml blocks of a [rows, cols] matrix). */
function encode(data: Float32Array, shape: number[], type: GgufTensorType): Uint8Array {
  if (type === 'f32') return new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
  if (type === 'f16') return new Uint8Array(packF16(data).buffer, 0, data.length * 2).slice();
  return toGgmlBlocks(quantise(type, data, shape[0], shape[1]));
}

/** llama.cpp's `general.architecture` for an HF model_type this writer converts. */
const ARCH_OF: Record<string, string> = { llama: 'llama', mixtral: 'llama', qwen3: 'qwen3', gemma2: 'gemma2', gemma3_text: 'gemma3' };

/**
 * Llama 3's RoPE divisors as convert_hf_to_gguf.py writes them into `rope_freqs.weight`
 * (LlamaModel.generate_extra_tensors): per frequency θ^(−2j/d), 1 above the high-frequency
 * wavelength, `factor` below the low one, 1 / ((1 − s)/factor + s) between. Unlike the converter,
 * which reads original_max_position_embeddings from the top of config.json (default 8192), this
 * takes it from rope_scaling, as HF does; the two agree for the released Llama 3.x checkpoints.
 */
function llama3FreqFactors(theta: number, d: number, s: Record<string, number>): Float32Array {
  const orig = s.original_max_position_embeddings, low = s.low_freq_factor, high = s.high_freq_factor;
  return Float32Array.from({ length: d / 2 }, (_, j) => {
    const wavelen = (2 * Math.PI) / theta ** (-(2 * j) / d);
    if (wavelen < orig / high) return 1;
    if (wavelen > orig / low) return s.factor;
    const smooth = (orig / wavelen - low) / (high - low);
    return 1 / ((1 - smooth) / s.factor + smooth);
  });
}

/**
 * query_pre_attn_scalar as llama-model.cpp derives it for Gemma (io/gguf_arch.ts): a config with
 * another value cannot be written in llama.cpp's layout.
 * @throws Error naming the key.
 */
function checkGemmaScalar(c: Record<string, number>, layers27b: number): void {
  const want = c.num_hidden_layers === layers27b ? c.hidden_size / c.num_attention_heads : c.head_dim;
  if ((c.query_pre_attn_scalar ?? want) !== want) throw new Error(`query_pre_attn_scalar ${c.query_pre_attn_scalar}: llama.cpp's Gemma files carry none and scale by ${want}^-0.5; this config cannot be written as one`);
}

/** The `{arch}.*` metadata convert_hf_to_gguf.py writes for config `c` (module comment). */
function metadata(arch: string, c: Record<string, any>, nHeads: number, nKv: number, dHead: number): Record<string, Value> {
  const a = arch;
  const meta: Record<string, Value> = {
    'general.architecture': { str: a },
    'general.alignment': { u32: ALIGN },
    [`${a}.block_count`]: { u32: c.num_hidden_layers },
    [`${a}.embedding_length`]: { u32: c.hidden_size },
    [`${a}.feed_forward_length`]: { u32: c.intermediate_size },
    [`${a}.context_length`]: { u32: c.max_position_embeddings },
    [`${a}.attention.head_count`]: { u32: nHeads },
    [`${a}.attention.head_count_kv`]: { u32: nKv },
    [`${a}.attention.key_length`]: { u32: dHead },
    [`${a}.attention.value_length`]: { u32: dHead },
    [`${a}.attention.layer_norm_rms_epsilon`]: { f32: c.rms_norm_eps },
  };
  const scaling = c.rope_scaling?.rope_type ?? c.rope_scaling?.type;
  if (scaling === 'linear') {
    meta[`${a}.rope.scaling.type`] = { str: 'linear' };
    meta[`${a}.rope.scaling.factor`] = { f32: c.rope_scaling.factor };
  } else if (scaling !== undefined && scaling !== 'default' && !(scaling === 'llama3' && a === 'llama')) throw new Error(`rope_scaling ${scaling} is not written here`);
  if (a === 'llama') {
    meta['llama.rope.freq_base'] = { f32: c.rope_theta ?? 10000 };
    meta['llama.rope.dimension_count'] = { u32: dHead };
    if (c.model_type === 'mixtral') {
      meta['llama.expert_count'] = { u32: c.num_local_experts };
      meta['llama.expert_used_count'] = { u32: c.num_experts_per_tok };
    }
  } else if (a === 'qwen3') meta['qwen3.rope.freq_base'] = { f32: c.rope_theta ?? 10000 };
  else if (a === 'gemma2') {
    // Gemma2Model.set_gguf_parameters writes no RoPE base: llama.cpp assumes 10000
    if ((c.rope_theta ?? 10000) !== 10000) throw new Error(`rope_theta ${c.rope_theta}: llama.cpp's Gemma 2 files carry none (10000 is assumed)`);
    checkGemmaScalar(c, 46);
    meta['gemma2.attn_logit_softcapping'] = { f32: c.attn_logit_softcapping ?? 50 };
    meta['gemma2.final_logit_softcapping'] = { f32: c.final_logit_softcapping ?? 30 };
    meta['gemma2.attention.sliding_window'] = { u32: c.sliding_window ?? 4096 };
  } else {
    checkGemmaScalar(c, 62);
    if (c.attn_logit_softcapping != null) throw new Error('attn_logit_softcapping is set: Gemma 3 files carry none');
    const pattern = c.sliding_window_pattern ?? 6;
    const rule = Array.from({ length: c.num_hidden_layers }, (_, l) => ((l + 1) % 6 !== 0 ? 'sliding_attention' : 'full_attention'));
    if (pattern !== 6 || (Array.isArray(c.layer_types) && c.layer_types.some((t: string, l: number) => t !== rule[l]))) throw new Error('Gemma 3 layers other than five local to one global: llama.cpp fixes that pattern');
    meta['gemma3.rope.freq_base'] = { f32: c.rope_theta ?? 1_000_000 };
    meta['gemma3.rope.freq_base_swa'] = { f32: c.rope_local_base_freq ?? 10000 };
    if (c.sliding_window != null) meta['gemma3.attention.sliding_window'] = { u32: c.sliding_window };
    if (c.final_logit_softcapping != null) meta['gemma3.final_logit_softcapping'] = { f32: c.final_logit_softcapping };
  }
  if (typeof c.bos_token_id === 'number') meta['tokenizer.ggml.bos_token_id'] = { u32: c.bos_token_id };
  if (typeof c.eos_token_id === 'number') meta['tokenizer.ggml.eos_token_id'] = { u32: c.eos_token_id };
  return meta;
}

/**
 * The GGUF bytes of a model folder (config.json + model.safetensors) of model_type llama (with
 * rope_scaling llama3 or linear), mixtral, qwen3, gemma2 or gemma3_text, as convert_hf_to_gguf.py
 * lays it out (module comment).
 * @param type storage of the linear weights; `embed` that of token_embd / output.
 * @throws Error for another model_type, a config llama.cpp's layout cannot carry, or a tensor
 *   without a llama.cpp name.
 */
export function hfToGguf(dir: string, type: GgufTensorType, embed: 'f32' | 'f16' = 'f32'): Uint8Array {
  const c = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const arch = ARCH_OF[c.model_type];
  if (!arch) throw new Error(`${dir}: model_type ${c.model_type} is not written here (${Object.keys(ARCH_OF).join(', ')} are)`);
  const family = GGUF_FAMILIES[arch];
  const bytes = new Uint8Array(fs.readFileSync(path.join(dir, 'model.safetensors')));
  const h = parseSafetensors(bytes);
  const nHeads = c.num_attention_heads, nKv = c.num_key_value_heads ?? nHeads, dHead = c.head_dim ?? c.hidden_size / nHeads;
  const meta = metadata(arch, c, nHeads, nKv, dHead);
  const tensors: GgufTensor[] = [];
  const scaling = c.rope_scaling?.rope_type ?? c.rope_scaling?.type;
  if (arch === 'llama' && scaling === 'llama3') {
    const f = llama3FreqFactors(c.rope_theta ?? 10000, dHead, c.rope_scaling);
    tensors.push({ name: 'rope_freqs.weight', shape: [f.length], type: 'f32', data: encode(f, [f.length], 'f32') });
  }
  /** Per stacked name: its experts' float32 values and their [rows, cols]. */
  const stacks = new Map<string, { parts: Float32Array[]; shape: number[] }>();
  for (const [name, e] of h.tensors) {
    if (name.endsWith('rotary_emb.inv_freq')) continue;
    const ex = arch === 'llama' ? ggufExpertName(name) : null;
    if (ex) {
      const st = stacks.get(ex.name) ?? { parts: [], shape: e.shape };
      st.parts[ex.expert] = decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype);
      stacks.set(ex.name, st);
      continue;
    }
    const g = ggufName(name, arch);
    if (!g) throw new Error(`${name} has no llama.cpp name in "${arch}"`);
    let data = decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype);
    const order = !family.permutesQk ? null : /attn_q\.weight$/.test(g) ? ropeRowOrder(nHeads, dHead) : /attn_k\.weight$/.test(g) ? ropeRowOrder(nKv, dHead) : null;
    if (order) {
      // GGUF row order[i] holds HF row i
      const w = e.shape[1], out = new Float32Array(data.length);
      order.forEach((dst, i) => out.set(data.subarray(i * w, (i + 1) * w), dst * w));
      data = out;
    }
    // Gemma: the converter stores 1 + w for every "norm.weight" (Gemma3Model.norm_shift), in float32
    if (family.normShift && name.endsWith('norm.weight')) data = data.map((x) => x + family.normShift);
    const table = g === 'token_embd.weight' || g === 'output.weight';
    const t: GgufTensorType = e.shape.length !== 2 || g.endsWith('ffn_gate_inp.weight') ? 'f32' : table ? embed : e.shape[1] % QK === 0 || type === 'f16' ? type : 'f32';
    tensors.push({ name: g, shape: e.shape, type: t, data: encode(data, e.shape, t) });
  }
  for (const [g, { parts, shape }] of stacks) {
    const [rows, cols] = shape;
    const t: GgufTensorType = cols % QK === 0 || type === 'f16' ? type : 'f32';
    const all = new Float32Array(parts.length * rows * cols);
    parts.forEach((p, e) => all.set(p, e * rows * cols));
    // expert matrices one after another: a [E·rows, cols] matrix, rows quantised independently
    tensors.push({ name: g, shape: [parts.length, rows, cols], type: t, data: encode(all, [parts.length * rows, cols], t) });
  }
  return writeGguf(meta, tensors);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const [dir, out] = process.argv.slice(2);
  const flag = (k: string) => { const i = process.argv.indexOf(`--${k}`); return i > 0 ? process.argv[i + 1] : undefined; };
  if (!dir || !out) {
    process.stderr.write('usage: npx tsx tools/gguf_write.ts <hf-folder> <out.gguf> [--type q8_0|q4_0|f16|f32] [--embed f32|f16]\n');
    process.exit(2);
  }
  const file = hfToGguf(dir, (flag('type') ?? 'q8_0') as GgufTensorType, (flag('embed') ?? 'f32') as 'f32' | 'f16');
  fs.writeFileSync(out, file);
  process.stdout.write(`${out}: ${file.length} bytes\n`);
}
