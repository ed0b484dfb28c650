/**
 * A small GGUF writer for tests and experiments: converts a Llama model folder in HF layout
 * (config.json + model.safetensors) into `model.gguf` the way llama.cpp's convert_hf_to_gguf.py
 * lays it out, with the linear weights as Q8_0, Q4_0, F16 or F32.
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
 * Metadata: general.architecture = "llama", general.alignment, llama.{block_count,
 * embedding_length, feed_forward_length, context_length, attention.head_count,
 * attention.head_count_kv, attention.key_length, attention.layer_norm_rms_epsilon, rope.freq_base},
 * tokenizer.ggml.{bos,eos}_token_id when config.json has them. (No tokenizer vocabulary: the engine
 * reads tokenizer.json beside the file.)
 * Tensors: llama.cpp names (io/gguf.ts), attn_q / attn_k rows permuted as LlamaModel.permute does;
 * norms F32; the embedding (and an untied output) F32 or --embed f16; a linear weight whose rows are
 * not a multiple of 32 values is written F32 (llama.cpp falls back the same way, to F16 or F32).
 * Mixtral folders are written as llama.cpp writes them: "llama" with llama.expert_count and
 * llama.expert_used_count, the router ffn_gate_inp F32 (llama-quantize leaves it so), and each
 * layer's experts stacked into ffn_gate_exps / ffn_up_exps / ffn_down_exps [n_experts, rows, cols]
 * in expert order.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { packF16 } from '../workers/engine/backend/f16';
import { quantise, QK, toGgmlBlocks } from '../workers/engine/backend/quant';
import { ggufExpertName, ggufName, ropeRowOrder } from '../workers/engine/io/gguf';
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

/**
 * The GGUF bytes of a Llama or Mixtral model folder (config.json + model.safetensors).
 * @param type storage of the linear weights; `embed` that of token_embd / output.
 * @throws Error for a config that is neither, or a tensor without a llama.cpp name.
 */
export function llamaToGguf(dir: string, type: GgufTensorType, embed: 'f32' | 'f16' = 'f32'): Uint8Array {
  const c = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  if (c.model_type !== 'llama' && c.model_type !== 'mixtral') throw new Error(`${dir}: model_type ${c.model_type} is neither llama nor mixtral`);
  const bytes = new Uint8Array(fs.readFileSync(path.join(dir, 'model.safetensors')));
  const h = parseSafetensors(bytes);
  const nHeads = c.num_attention_heads, nKv = c.num_key_value_heads ?? nHeads, dHead = c.head_dim ?? c.hidden_size / nHeads;
  const tensors: GgufTensor[] = [];
  /** Per stacked name: its experts' float32 values and their [rows, cols]. */
  const stacks = new Map<string, { parts: Float32Array[]; shape: number[] }>();
  for (const [name, e] of h.tensors) {
    if (name.endsWith('rotary_emb.inv_freq')) continue;
    const ex = ggufExpertName(name);
    if (ex) {
      const st = stacks.get(ex.name) ?? { parts: [], shape: e.shape };
      st.parts[ex.expert] = decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype);
      stacks.set(ex.name, st);
      continue;
    }
    const g = ggufName(name);
    if (!g) throw new Error(`${name} has no llama.cpp name`);
    let data = decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype);
    const order = /attn_q\.weight$/.test(g) ? ropeRowOrder(nHeads, dHead) : /attn_k\.weight$/.test(g) ? ropeRowOrder(nKv, dHead) : null;
    if (order) {
      // GGUF row order[i] holds HF row i
      const w = e.shape[1], out = new Float32Array(data.length);
      order.forEach((dst, i) => out.set(data.subarray(i * w, (i + 1) * w), dst * w));
      data = out;
    }
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
  const meta: Record<string, Value> = {
    'general.architecture': { str: 'llama' },
    'general.alignment': { u32: ALIGN },
    'llama.block_count': { u32: c.num_hidden_layers },
    'llama.embedding_length': { u32: c.hidden_size },
    'llama.feed_forward_length': { u32: c.intermediate_size },
    'llama.context_length': { u32: c.max_position_embeddings },
    'llama.attention.head_count': { u32: nHeads },
    'llama.attention.head_count_kv': { u32: nKv },
    'llama.attention.key_length': { u32: dHead },
    'llama.attention.layer_norm_rms_epsilon': { f32: c.rms_norm_eps },
    'llama.rope.freq_base': { f32: c.rope_theta ?? 10000 },
  };
  if (c.model_type === 'mixtral') {
    meta['llama.expert_count'] = { u32: c.num_local_experts };
    meta['llama.expert_used_count'] = { u32: c.num_experts_per_tok };
  }
  if (typeof c.bos_token_id === 'number') meta['tokenizer.ggml.bos_token_id'] = { u32: c.bos_token_id };
  if (typeof c.eos_token_id === 'number') meta['tokenizer.ggml.eos_token_id'] = { u32: c.eos_token_id };
  return writeGguf(meta, tensors);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const [dir, out] = process.argv.slice(2);
  const flag = (k: string) => { const i = process.argv.indexOf(`--${k}`); return i > 0 ? process.argv[i + 1] : undefined; };
  if (!dir || !out) {
    process.stderr.write('usage: npx tsx tools/gguf_write.ts <hf-folder> <out.gguf> [--type q8_0|q4_0|f16|f32] [--embed f32|f16]\n');
    process.exit(2);
  }
  const file = llamaToGguf(dir, (flag('type') ?? 'q8_0') as GgufTensorType, (flag('embed') ?? 'f32') as 'f32' | 'f16');
  fs.writeFileSync(out, file);
  process.stdout.write(`${out}: ${file.length} bytes\n`);
}
