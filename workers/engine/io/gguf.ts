/**
 * GGUF checkpoints (llama.cpp's format, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
 * the header (metadata key/values and tensor infos) is parsed with `@huggingface/gguf`; the tensor
 * data is read here from the offsets it gives (relative to the aligned data section).
 *
 * Supported: the architectures of io/gguf_arch.ts ("llama", which llama.cpp also uses for Mistral and
 * SmolLM, with Llama 3's rope_freqs.weight; "qwen3"; "gemma2"; "gemma3"), tensors of type F32, F16,
 * Q8_0 and Q4_0. llama.cpp's tensor names are mapped to HF names, the rows of a Llama attn_q /
 * attn_k are put back in HF order (convert_hf_to_gguf.py permutes them for GGML's interleaved RoPE:
 * LlamaModel.permute, reshape(n_head, 2, d_head/2, in).swapaxes(1, 2)), and the 1 the converter adds
 * to Gemma's norm weights is taken off again. Q8_0 / Q4_0 matrices stay quantised (their
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
import { GGUF_ARCHITECTURES, GGUF_FAMILIES, ggufConfigKeys, TOP_NAMES, type GgufFamily, type GgufMeta } from './gguf_arch';

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
 * The HF name of a llama.cpp tensor name in a file of architecture `arch`, or null when it has none.
 * (Exported for the test writer, tools/gguf_write.ts, which maps the other way.)
 */
export function hfName(ggufName: string, arch: string): string | null {
  if (Object.hasOwn(TOP_NAMES, ggufName)) return TOP_NAMES[ggufName];
  const m = /^blk\.(\d+)\.(.+)$/.exec(ggufName);
  const block = Object.hasOwn(GGUF_FAMILIES, arch) ? GGUF_FAMILIES[arch].block : {};
  const hf = m && Object.hasOwn(block, m[2]) ? block[m[2]] : undefined;
  return hf ? `model.layers.${m![1]}.${hf}` : null;
}

/** HF name → llama.cpp name in a file of architecture `arch` (inverse of hfName). */
export function ggufName(hf: string, arch: string): string | null {
  const top = Object.keys(TOP_NAMES).find((g) => TOP_NAMES[g] === hf);
  if (top) return top;
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hf);
  const block = m && Object.hasOwn(GGUF_FAMILIES, arch) ? Object.entries(GGUF_FAMILIES[arch].block).find(([, h]) => h === m[2]) : undefined;
  return block ? `blk.${m![1]}.${block[0]}` : null;
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
  /** Its `general.architecture` (a key of GGUF_FAMILIES). */
  arch: string;
  /** HF config.json keys derived from the metadata (`{arch}.*`, tokenizer.ggml.*; io/gguf_arch.ts). */
  config: HFConfig;
  /** Tensors under HF names, as the safetensors checkpoint holds them; Q8_0 / Q4_0 matrices also through `quant`. */
  source: WeightSource;
  /** GGUF tensor types, counted ("Q8_0": 154, "F32": 61). */
  types: Record<string, number>;
}

/**
 * A message about the config derived from a file of architecture `arch` rewritten to name the GGUF
 * file and its metadata keys: `config.json "num_hidden_layers"` → `model.gguf metadata
 * "llama.block_count"`, and every other quoted config key that has a metadata key (ggufConfigKeys).
 */
export function ggufConfigMessage(message: string, file: string, arch: string): string {
  const keys = ggufConfigKeys(arch);
  return message
    .replace(/config\.json(?=[ :])/g, `${file} metadata`)
    .replace(/"(\w+)"/g, (m, k: string) => (keys[k] ? `"${keys[k]}"` : m));
}

/**
 * The metadata of a file of architecture `arch` as io/gguf_arch.ts reads it: numbers (u32, u64 as
 * bigint, f32) checked against the bounds of the config key they become (arch/config.ts
 * CONFIG_BOUNDS), every error naming its metadata key.
 */
function metaReader(meta: Record<string, unknown>, arch: string, file: string): GgufMeta {
  const keys = ggufConfigKeys(arch);
  return {
    value: (key) => meta[key],
    num(key, fallback) {
      const v = meta[key];
      if (v === undefined) {
        if (fallback !== undefined) return fallback;
        throw new GgufError(file, `metadata key "${key}" is missing (it is needed to build the model's config)`);
      }
      const n = typeof v === 'bigint' ? Number(v) : v;
      if (typeof n !== 'number' || !Number.isFinite(n)) throw new GgufError(file, `metadata key "${key}" is ${String(v)}, not a number`);
      const hf = Object.keys(keys).find((k) => keys[k] === key);
      if (hf) {
        try {
          checkConfigNumber(hf, n);
        } catch (e) {
          throw new GgufError(file, ggufConfigMessage((e as Error).message, file, arch).replace(`${file} metadata "${key}"`, `metadata key "${key}"`));
        }
      }
      return n;
    },
    refuse(key, why) {
      throw new GgufError(file, `metadata key "${key}" ${why}`);
    },
  };
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

/** Float32 values of an F32 or F16 tensor's bytes. */
function floats(type: 'F32' | 'F16', r: Uint8Array): Float32Array {
  if (type === 'F32') return new Float32Array(r.slice().buffer);
  const dv = new DataView(r.buffer, r.byteOffset, r.byteLength);
  return Float32Array.from({ length: r.length / 2 }, (_, i) => fromF16Bits(dv.getUint16(2 * i, true)));
}

/**
 * Reads a GGUF file and checks it: an architecture of io/gguf_arch.ts (Mixtral: "llama" with
 * experts), supported tensor types, every tensor inside the data section, no two overlapping,
 * quantised rows a multiple of 32. The config comes from the metadata, the tensors under HF names
 * as the safetensors checkpoint holds them (Llama q/k rows un-permuted, Gemma norms without the
 * converter's + 1); Llama 3's rope_freqs.weight becomes rope_scaling "freq_factors".
 * @param onProgress bytes read so far and in all.
 * @throws GgufError naming the file and the problem (wrong magic, truncation, an unsupported
 *   architecture, tensor type or metadata key, offsets out of range, a tensor with no counterpart
 *   in the architecture).
 */
export async function openGguf(files: ModelFiles, onProgress?: (loaded: number, total: number) => void, file = GGUF_FILE): Promise<GgufCheckpoint> {
  const bytes = await files.bytes(file, onProgress);
  const label = `${files.label}/${file}`;
  const head = await parseHeader(bytes, label);
  const meta = head.metadata as unknown as Record<string, unknown>;
  // the reader pads what it fetched with zeros, so a cut header parses: its end must lie in the file
  if (head.tensorInfoByteRange[1] > bytes.length) throw new GgufError(label, `the header runs past the end of the file (${bytes.length} bytes; truncated?)`);
  if (!head.littleEndian) throw new GgufError(label, 'big-endian GGUF files are not supported');
  const arch = String(meta['general.architecture']);
  const family: GgufFamily | undefined = Object.hasOwn(GGUF_FAMILIES, arch) ? GGUF_FAMILIES[arch] : undefined;
  if (!family) throw new GgufError(label, `general.architecture is "${arch}": only ${GGUF_ARCHITECTURES} GGUF files are imported (Llama, Mistral, SmolLM, TinyLlama, Mixtral; Qwen3; Gemma 2; Gemma 3); convert other models from their safetensors`);
  const dataStart = Number(head.tensorDataOffset);
  if (dataStart > bytes.length) throw new GgufError(label, `the tensor data would start at byte ${dataStart}, past the end of the file (${bytes.length} bytes; truncated?)`);
  const dataSize = bytes.length - dataStart;
  const entries = new Map<string, Entry>();
  const types: Record<string, number> = {};
  let ropeFreqs: Entry | null = null;
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
    if (arch === 'llama' && hfExpertName(t.name, 0)) {
      if (shape.length !== 3) throw new GgufError(label, `tensor "${t.name}" has ${shape.length} dimensions; stacked experts have 3 (experts, rows, columns)`);
      const [nE, rows, cols] = shape, per = byteLength(type, rows * cols);
      for (let e = 0; e < nE; e++) {
        const hf = hfExpertName(t.name, e)!;
        if (entries.has(hf)) throw new GgufError(label, `tensor "${t.name}" appears twice`);
        entries.set(hf, { name: `${t.name}[${e}]`, type, shape: [rows, cols], begin: begin + e * per, end: begin + (e + 1) * per });
      }
      continue;
    }
    if (t.name === 'rope_freqs.weight' && family.ropeFreqs) {
      if (type !== 'F32' && type !== 'F16') throw new GgufError(label, `tensor "rope_freqs.weight" is ${typeName}; RoPE frequency factors are F32 (or F16)`);
      if (ropeFreqs) throw new GgufError(label, 'tensor "rope_freqs.weight" appears twice');
      ropeFreqs = { name: t.name, type, shape, begin, end };
      continue;
    }
    const hf = hfName(t.name, arch);
    if (!hf) throw new GgufError(label, `tensor "${t.name}" has no counterpart in the "${arch}" architecture (is general.architecture right?)`);
    if (entries.has(hf)) throw new GgufError(label, `tensor "${t.name}" appears twice`);
    entries.set(hf, { name: t.name, type, shape, begin, end });
  }
  const sorted = [...entries.values(), ...(ropeFreqs ? [ropeFreqs] : [])].sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].begin < sorted[i - 1].end) throw new GgufError(label, `tensors "${sorted[i - 1].name}" and "${sorted[i].name}" overlap`);
  }
  const embd = entries.get('model.embed_tokens.weight');
  if (!embd) throw new GgufError(label, 'tensor "token_embd.weight" is missing');
  const raw = (e: Entry) => bytes.subarray(dataStart + e.begin, dataStart + e.end);

  const freqs = ropeFreqs ? floats(ropeFreqs.type as 'F32' | 'F16', raw(ropeFreqs)) : null;
  const config = family.config(metaReader(meta, arch, label), { vocab: embd.shape[0], hasOutput: entries.has('lm_head.weight'), ropeFreqs: freqs });
  if (freqs && freqs.length * 2 !== config.head_dim) throw new GgufError(label, `tensor "rope_freqs.weight" holds ${freqs.length} factors; expected head_dim / 2 = ${Number(config.head_dim) / 2}`);
  const nHeads = config.num_attention_heads as number, nKv = config.num_key_value_heads as number, dHead = config.head_dim as number;

  /** GGUF row order of the HF rows of q_proj / k_proj (identity elsewhere). */
  const rowOrder = (hf: string): number[] | null => {
    if (!family.permutesQk) return null;
    if (/self_attn\.q_proj\.weight$/.test(hf)) return ropeRowOrder(nHeads, dHead);
    if (/self_attn\.k_proj\.weight$/.test(hf)) return ropeRowOrder(nKv, dHead);
    return null;
  };
  const entry = (name: string): Entry => {
    const e = entries.get(name);
    if (!e) throw new Error(`${label}: has no tensor for "${name}" (llama.cpp name "${ggufName(name, arch) ?? '?'}")`);
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
      let data = e.type === 'F32' || e.type === 'F16' ? floats(e.type, raw(e)) : dequantise(quantOf(e, name));
      const order = e.type === 'F32' || e.type === 'F16' ? rowOrder(name) : null;
      if (order) {
        const w = e.shape[1], out = new Float32Array(data.length);
        order.forEach((src, i) => out.set(data.subarray(src * w, (src + 1) * w), i * w));
        data = out;
      }
      const bad = firstNonFinite(data);
      if (bad >= 0) throw new Error(`${label}: tensor "${e.name}" holds ${data[bad]} at index ${bad}: weights must be finite`);
      // convert_hf_to_gguf.py added normShift to every weight whose HF name ends in "norm.weight"
      if (family.normShift && name.endsWith('norm.weight')) for (let i = 0; i < data.length; i++) data[i] -= family.normShift;
      return { data, shape: e.shape };
    },
    quant(name) {
      const e = entries.get(name);
      return e && e.type !== 'F32' && e.type !== 'F16' && name !== 'model.embed_tokens.weight' ? quantOf(e, name) : undefined;
    },
  };
  return { arch, config, source, types };
}
