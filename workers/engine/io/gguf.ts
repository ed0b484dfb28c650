/**
 * GGUF checkpoints (llama.cpp's format, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
 * the header (metadata key/values and tensor infos) is parsed with `@huggingface/gguf`; the tensor
 * data is read here from the offsets it gives (relative to the aligned data section).
 *
 * Supported: the Llama architecture (`general.architecture` = "llama", which llama.cpp also uses
 * for Mistral and SmolLM), tensors of type F32, F16, Q8_0 and Q4_0. llama.cpp's tensor names are
 * mapped to HF Llama names (LLAMA_NAMES below), and the rows of attn_q / attn_k are put back in
 * HF order: convert_hf_to_gguf.py permutes them for GGML's interleaved RoPE (LlamaModel.permute:
 * reshape(n_head, 2, d_head/2, in).swapaxes(1, 2)). Q8_0 / Q4_0 matrices stay quantised (their
 * blocks are repacked, never re-quantised); a quantised embedding (token_embd) is dequantised to
 * float32, because the embedding is gathered by row.
 *
 * Mixtral (llama.cpp writes it as "llama" with `llama.expert_count` > 0, convert_hf_to_gguf.py
 * MixtralModel): the router `ffn_gate_inp` [n_experts, d_model] and the stacked experts
 * `ffn_gate_exps` / `ffn_up_exps` [n_experts, d_ff, d_model] and `ffn_down_exps` [n_experts, d_model, d_ff]
 * (HF order; GGUF lists ne reversed) become HF's per-expert w1 / w3 / w2: expert e is the byte range
 * of rows e·d_ff … (e+1)·d_ff − 1 of the stacked matrix (quantised blocks never straddle rows), so
 * nothing is copied or re-quantised.
 */
import { gguf, GGMLQuantizationType, type GGUFParseOutput } from '@huggingface/gguf';
import { firstNonFinite } from '../analysis/finite';
import type { HFConfig, WeightSource } from '../arch/types';
import { checkConfigNumber } from '../arch/config';
import { fromF16Bits } from '../backend/f16';
import { dequantise, fromGgmlBlocks, GGML_BLOCK_BYTES, permuteRows, QK, type QuantFormat, type QuantizedMatrix } from '../backend/quant';
import type { ModelFiles } from './model_files';

/** The checkpoint file a GGUF model folder holds. */
export const GGUF_FILE = 'model.gguf';

/** Thrown for a malformed or unsupported GGUF file; the message says what and where. */
export class GgufError extends Error {
  constructor(file: string, what: string) {
    super(`${file}: ${what}`);
    this.name = 'GgufError';
  }
}

/** GGML tensor types this engine reads, with their storage. */
const TYPES: Partial<Record<number, 'F32' | 'F16' | QuantFormat>> = {
  [GGMLQuantizationType.F32]: 'F32',
  [GGMLQuantizationType.F16]: 'F16',
  [GGMLQuantizationType.Q8_0]: 'q8_0',
  [GGMLQuantizationType.Q4_0]: 'q4_0',
};

/** llama.cpp tensor name → HF Llama state_dict name (`{l}` = block index). */
const LLAMA_NAMES: Record<string, string> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
  'blk.{l}.attn_norm.weight': 'model.layers.{l}.input_layernorm.weight',
  'blk.{l}.attn_q.weight': 'model.layers.{l}.self_attn.q_proj.weight',
  'blk.{l}.attn_k.weight': 'model.layers.{l}.self_attn.k_proj.weight',
  'blk.{l}.attn_v.weight': 'model.layers.{l}.self_attn.v_proj.weight',
  'blk.{l}.attn_output.weight': 'model.layers.{l}.self_attn.o_proj.weight',
  'blk.{l}.ffn_norm.weight': 'model.layers.{l}.post_attention_layernorm.weight',
  'blk.{l}.ffn_gate.weight': 'model.layers.{l}.mlp.gate_proj.weight',
  'blk.{l}.ffn_up.weight': 'model.layers.{l}.mlp.up_proj.weight',
  'blk.{l}.ffn_down.weight': 'model.layers.{l}.mlp.down_proj.weight',
  'blk.{l}.ffn_gate_inp.weight': 'model.layers.{l}.block_sparse_moe.gate.weight',
};

/** llama.cpp stacked expert tensor → HF Mixtral per-expert name (`{l}` block, `{e}` expert). */
const STACKED_NAMES: Record<string, string> = {
  'blk.{l}.ffn_gate_exps.weight': 'model.layers.{l}.block_sparse_moe.experts.{e}.w1.weight',
  'blk.{l}.ffn_up_exps.weight': 'model.layers.{l}.block_sparse_moe.experts.{e}.w3.weight',
  'blk.{l}.ffn_down_exps.weight': 'model.layers.{l}.block_sparse_moe.experts.{e}.w2.weight',
};

/** The HF name of expert e of a stacked llama.cpp expert tensor, or null when the name is not one. */
export function hfExpertName(ggufName: string, e: number): string | null {
  const m = /^blk\.(\d+)\.(.+)$/.exec(ggufName);
  const hf = m ? STACKED_NAMES[`blk.{l}.${m[2]}`] : undefined;
  return hf ? hf.replace('{l}', m![1]).replace('{e}', String(e)) : null;
}

/** The stacked llama.cpp name and expert index of an HF per-expert name (inverse of hfExpertName), or null. */
export function ggufExpertName(hf: string): { name: string; expert: number } | null {
  const m = /^model\.layers\.(\d+)\.block_sparse_moe\.experts\.(\d+)\.(w[123])\.weight$/.exec(hf);
  if (!m) return null;
  const g = Object.keys(STACKED_NAMES).find((k) => STACKED_NAMES[k].endsWith(`.${m[3]}.weight`))!;
  return { name: g.replace('{l}', m[1]), expert: Number(m[2]) };
}

/**
 * The HF name of a llama.cpp tensor name, or null when it has none.
 * (Exported for the test writer, tools/gguf_write.ts, which maps the other way.)
 */
export function hfName(ggufName: string): string | null {
  const m = /^blk\.(\d+)\.(.+)$/.exec(ggufName);
  const key = m ? `blk.{l}.${m[2]}` : ggufName;
  const hf = LLAMA_NAMES[key];
  return hf ? hf.replace('{l}', m ? m[1] : '') : null;
}

/** HF name → llama.cpp name (inverse of hfName). */
export function ggufName(hf: string): string | null {
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hf);
  for (const [g, h] of Object.entries(LLAMA_NAMES)) {
    if (m ? h === `model.layers.{l}.${m[2]}` : h === hf) return g.replace('{l}', m ? m[1] : '');
  }
  return null;
}

/**
 * llama.cpp's Q/K row order (convert_hf_to_gguf.py LlamaModel.permute): HF row h·d + t·d/2 + j
 * (head h, half t, j < d/2) is stored at row h·d + 2j + t. perm[i] = the GGUF row holding HF row i
 * (for permuteRows); applying the inverse map writes a GGUF file.
 */
export function ropeRowOrder(nHeads: number, dHead: number): number[] {
  const half = dHead / 2;
  const perm: number[] = [];
  for (let h = 0; h < nHeads; h++) for (let t = 0; t < 2; t++) for (let j = 0; j < half; j++) perm.push(h * dHead + 2 * j + t);
  return perm;
}

interface Entry { name: string; type: 'F32' | 'F16' | QuantFormat; shape: number[]; begin: number; end: number }

/** Bytes of a tensor of `count` values in `type`. */
function byteLength(type: Entry['type'], count: number): number {
  if (type === 'F32') return 4 * count;
  if (type === 'F16') return 2 * count;
  return (count / QK) * GGML_BLOCK_BYTES[type];
}

/** A GGUF checkpoint opened for loading. */
export interface GgufCheckpoint {
  /** HF config.json keys derived from the metadata (llama.*, tokenizer.ggml.*). */
  config: HFConfig;
  /** Tensors under HF Llama names; Q8_0 / Q4_0 matrices also through `quant`. */
  source: WeightSource;
  /** GGUF tensor types, counted ("Q8_0": 154, "F32": 61). */
  types: Record<string, number>;
}

/**
 * The metadata key each derived config.json key comes from: errors about the config of a GGUF
 * file name these (the file has no config.json).
 */
export const GGUF_CONFIG_KEYS: Readonly<Record<string, string>> = {
  hidden_size: 'llama.embedding_length',
  num_hidden_layers: 'llama.block_count',
  intermediate_size: 'llama.feed_forward_length',
  num_attention_heads: 'llama.attention.head_count',
  num_key_value_heads: 'llama.attention.head_count_kv',
  head_dim: 'llama.attention.key_length',
  max_position_embeddings: 'llama.context_length',
  rms_norm_eps: 'llama.attention.layer_norm_rms_epsilon',
  rope_theta: 'llama.rope.freq_base',
  bos_token_id: 'tokenizer.ggml.bos_token_id',
  eos_token_id: 'tokenizer.ggml.eos_token_id',
  vocab_size: 'token_embd.weight rows',
  num_local_experts: 'llama.expert_count',
  num_experts_per_tok: 'llama.expert_used_count',
};

/**
 * A message about the derived config rewritten to name the GGUF file and its metadata keys:
 * `config.json "num_hidden_layers"` → `model.gguf metadata "llama.block_count"`, and every other
 * quoted config key that has a metadata key.
 */
export function ggufConfigMessage(message: string, file: string): string {
  return message
    .replace(/config\.json(?=[ :])/g, `${file} metadata`)
    .replace(/"(\w+)"/g, (m, k: string) => (GGUF_CONFIG_KEYS[k] ? `"${GGUF_CONFIG_KEYS[k]}"` : m));
}

/**
 * A numeric metadata value (u32, u64 as bigint, f32), checked against the bounds of the config key
 * it becomes (arch/config.ts CONFIG_BOUNDS) and named by its metadata key.
 */
function num(meta: Record<string, unknown>, key: string, file: string, fallback?: number): number {
  const v = meta[key];
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw new GgufError(file, `metadata key "${key}" is missing (it is needed to build the model's config)`);
  }
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new GgufError(file, `metadata key "${key}" is ${String(v)}, not a number`);
  const hf = Object.keys(GGUF_CONFIG_KEYS).find((k) => GGUF_CONFIG_KEYS[k] === key);
  if (hf) {
    try {
      checkConfigNumber(hf, n);
    } catch (e) {
      throw new GgufError(file, ggufConfigMessage((e as Error).message, file).replace(`${file} metadata "${key}"`, `metadata key "${key}"`));
    }
  }
  return n;
}

/** Parses the header from bytes held in memory through @huggingface/gguf (its reader fetches byte ranges). */
async function parseHeader(bytes: Uint8Array, file: string): Promise<GGUFParseOutput> {
  const serve = async (_: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const m = /bytes=(\d+)-(\d+)/.exec(String((init?.headers as Record<string, string> | undefined)?.Range ?? ''));
    const start = m ? Number(m[1]) : 0, end = m ? Math.min(Number(m[2]) + 1, bytes.length) : bytes.length;
    const body = bytes.slice(Math.min(start, bytes.length), end);
    return new Response(body, { status: 206, headers: { 'content-range': `bytes ${start}-${end - 1}/${bytes.length}` } });
  };
  if (bytes.length < 8) throw new GgufError(file, `file is ${bytes.length} bytes, too short for a GGUF header (truncated?)`);
  try {
    return await gguf(`https://branchpoint.invalid/${encodeURIComponent(file)}`, { fetch: serve as typeof fetch });
  } catch (e) {
    const msg = (e as Error).message;
    if (e instanceof RangeError || /outside the bounds|out of range|beyond/i.test(msg)) throw new GgufError(file, `the header runs past the end of the file (${bytes.length} bytes; truncated?)`);
    throw new GgufError(file, `not a readable GGUF file (${msg})`);
  }
}

/**
 * Reads a GGUF file and checks it: Llama architecture (Mixtral: with experts), supported tensor types, every tensor inside
 * the data section, no two overlapping, quantised rows a multiple of 32.
 * @param onProgress bytes read so far and in all.
 * @throws GgufError naming the file and the problem (wrong magic, truncation, an unsupported
 *   architecture or tensor type, offsets out of range, a tensor with no Llama counterpart).
 */
export async function openGguf(files: ModelFiles, onProgress?: (loaded: number, total: number) => void, file = GGUF_FILE): Promise<GgufCheckpoint> {
  const bytes = await files.bytes(file, onProgress);
  const label = `${files.label}/${file}`;
  const head = await parseHeader(bytes, label);
  const meta = head.metadata as unknown as Record<string, unknown>;
  // the reader pads what it fetched with zeros, so a cut header parses: its end must lie in the file
  if (head.tensorInfoByteRange[1] > bytes.length) throw new GgufError(label, `the header runs past the end of the file (${bytes.length} bytes; truncated?)`);
  if (!head.littleEndian) throw new GgufError(label, 'big-endian GGUF files are not supported');
  const arch = meta['general.architecture'];
  if (arch !== 'llama') throw new GgufError(label, `general.architecture is "${String(arch)}": only "llama" GGUF files are imported (Llama, Mistral, SmolLM, TinyLlama); convert other models from their safetensors`);
  const dataStart = Number(head.tensorDataOffset);
  if (dataStart > bytes.length) throw new GgufError(label, `the tensor data would start at byte ${dataStart}, past the end of the file (${bytes.length} bytes; truncated?)`);
  const dataSize = bytes.length - dataStart;
  const entries = new Map<string, Entry>();
  const types: Record<string, number> = {};
  for (const t of head.tensorInfos) {
    const type = TYPES[t.dtype];
    const typeName = GGMLQuantizationType[t.dtype] ?? `type ${t.dtype}`;
    if (!type) throw new GgufError(label, `tensor "${t.name}" is ${typeName}: only F32, F16, Q8_0 and Q4_0 tensors are read (re-quantise with llama-quantize to Q8_0 or Q4_0)`);
    types[typeName] = (types[typeName] ?? 0) + 1;
    const shape = t.shape.map(Number).reverse(); // GGUF lists ne[0] (the contiguous axis) first
    const count = shape.reduce((a, b) => a * b, 1);
    if (type !== 'F32' && type !== 'F16' && shape[shape.length - 1] % QK !== 0) throw new GgufError(label, `tensor "${t.name}" is ${typeName} with rows of ${shape[shape.length - 1]} values, not a multiple of ${QK}`);
    const begin = Number(t.offset), end = begin + byteLength(type, count);
    if (!Number.isSafeInteger(begin) || end > dataSize) throw new GgufError(label, `tensor "${t.name}" spans bytes [${begin}, ${end}) of the data section, which has ${dataSize} bytes (truncated file or an offset out of range)`);
    if (hfExpertName(t.name, 0)) {
      if (shape.length !== 3) throw new GgufError(label, `tensor "${t.name}" has ${shape.length} dimensions; stacked experts have 3 (experts, rows, columns)`);
      const [nE, rows, cols] = shape, per = byteLength(type, rows * cols);
      for (let e = 0; e < nE; e++) {
        const hf = hfExpertName(t.name, e)!;
        if (entries.has(hf)) throw new GgufError(label, `tensor "${t.name}" appears twice`);
        entries.set(hf, { name: `${t.name}[${e}]`, type, shape: [rows, cols], begin: begin + e * per, end: begin + (e + 1) * per });
      }
      continue;
    }
    const hf = hfName(t.name);
    if (!hf) {
      if (t.name === 'rope_freqs.weight') throw new GgufError(label, 'tensor "rope_freqs.weight" (Llama 3.1 RoPE scaling) is not supported in GGUF imports; load the safetensors checkpoint instead');
      throw new GgufError(label, `tensor "${t.name}" has no Llama counterpart (is general.architecture right?)`);
    }
    if (entries.has(hf)) throw new GgufError(label, `tensor "${t.name}" appears twice`);
    entries.set(hf, { name: t.name, type, shape, begin, end });
  }
  const sorted = [...entries.values()].sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].begin < sorted[i - 1].end) throw new GgufError(label, `tensors "${sorted[i - 1].name}" and "${sorted[i].name}" overlap`);
  }
  const embd = entries.get('model.embed_tokens.weight');
  if (!embd) throw new GgufError(label, 'tensor "token_embd.weight" is missing');

  const nHeads = num(meta, 'llama.attention.head_count', label);
  const nKv = num(meta, 'llama.attention.head_count_kv', label, nHeads);
  const dModel = num(meta, 'llama.embedding_length', label);
  if (meta['llama.attention.key_length'] === undefined && dModel % nHeads !== 0) throw new GgufError(label, `metadata key "llama.embedding_length" ${dModel} is not divisible by "llama.attention.head_count" ${nHeads} (and there is no "llama.attention.key_length")`);
  const dHead = num(meta, 'llama.attention.key_length', label, dModel / nHeads);
  const scaling = meta['llama.rope.scaling.type'];
  if (scaling !== undefined && scaling !== 'none') throw new GgufError(label, `llama.rope.scaling.type "${String(scaling)}" is not supported in GGUF imports`);
  const nExperts = num(meta, 'llama.expert_count', label, 0);
  const experts: HFConfig = nExperts > 0 ? { num_local_experts: nExperts, num_experts_per_tok: num(meta, 'llama.expert_used_count', label), sliding_window: null } : {};
  const config: HFConfig = {
    model_type: nExperts > 0 ? 'mixtral' : 'llama',
    ...experts,
    hidden_size: dModel,
    num_hidden_layers: num(meta, 'llama.block_count', label),
    intermediate_size: num(meta, 'llama.feed_forward_length', label),
    num_attention_heads: nHeads,
    num_key_value_heads: nKv,
    head_dim: dHead,
    vocab_size: embd.shape[0],
    max_position_embeddings: num(meta, 'llama.context_length', label),
    rms_norm_eps: num(meta, 'llama.attention.layer_norm_rms_epsilon', label),
    rope_theta: num(meta, 'llama.rope.freq_base', label, 10000),
    tie_word_embeddings: !entries.has('lm_head.weight'),
    bos_token_id: meta['tokenizer.ggml.bos_token_id'] === undefined ? null : num(meta, 'tokenizer.ggml.bos_token_id', label),
    eos_token_id: meta['tokenizer.ggml.eos_token_id'] === undefined ? null : num(meta, 'tokenizer.ggml.eos_token_id', label),
    hidden_act: 'silu',
  };

  /** GGUF row order of the HF rows of q_proj / k_proj (identity elsewhere). */
  const rowOrder = (hf: string): number[] | null => {
    if (/self_attn\.q_proj\.weight$/.test(hf)) return ropeRowOrder(nHeads, dHead);
    if (/self_attn\.k_proj\.weight$/.test(hf)) return ropeRowOrder(nKv, dHead);
    return null;
  };
  const raw = (e: Entry) => bytes.subarray(dataStart + e.begin, dataStart + e.end);
  const entry = (name: string): Entry => {
    const e = entries.get(name);
    if (!e) throw new Error(`${label}: has no tensor for "${name}" (llama.cpp name "${ggufName(name) ?? '?'}")`);
    return e;
  };
  const quantOf = (e: Entry, hf: string): QuantizedMatrix => {
    const [rows, cols] = e.shape;
    const q = fromGgmlBlocks(e.type as QuantFormat, raw(e), rows, cols);
    const order = rowOrder(hf);
    return order ? permuteRows(q, order) : q;
  };
  const source: WeightSource & { quant(name: string): QuantizedMatrix | undefined } = {
    has: (name) => entries.has(name),
    names: () => [...entries.keys()],
    get(name) {
      const e = entry(name);
      let data: Float32Array;
      if (e.type === 'F32') data = new Float32Array(raw(e).slice().buffer);
      else if (e.type === 'F16') {
        const r = raw(e), dv = new DataView(r.buffer, r.byteOffset, r.byteLength);
        data = Float32Array.from({ length: r.length / 2 }, (_, i) => fromF16Bits(dv.getUint16(2 * i, true)));
      } else return { data: dequantise(quantOf(e, name)), shape: e.shape };
      const order = rowOrder(name);
      if (order) {
        const w = e.shape[1], out = new Float32Array(data.length);
        order.forEach((src, i) => out.set(data.subarray(src * w, (src + 1) * w), i * w));
        data = out;
      }
      const bad = firstNonFinite(data);
      if (bad >= 0) throw new Error(`${label}: tensor "${e.name}" holds ${data[bad]} at index ${bad}: weights must be finite`);
      return { data, shape: e.shape };
    },
    quant(name) {
      const e = entries.get(name);
      return e && e.type !== 'F32' && e.type !== 'F16' && name !== 'model.embed_tokens.weight' ? quantOf(e, name) : undefined;
    },
  };
  return { config, source, types };
}
