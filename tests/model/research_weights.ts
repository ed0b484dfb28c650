import * as fs from 'node:fs';

/**
 * A checkpoint file's tensors by HF name, decoded to float64 here from the file's own bytes, for the
 * float64 reference forward of the research-size checkpoints (tests/model/research_forward.ts). No
 * engine code: the formats are parsed from their specifications (safetensors "Format"; GGUF v3,
 * ggml-org/ggml docs/gguf.md, with ggml's Q8_0 / Q4_0 block layouts). Each call reads only the
 * bytes it needs, so a 1B model is never held in float64 whole.
 */
export interface Float64Weights {
  /** The tensor's HF shape. @throws Error when the file has no such tensor. */
  shape(name: string): number[];
  /** Rows [start, start + n) of a matrix [rows, cols] (or the whole of a vector: start 0, n 1), row-major. */
  rows(name: string, start: number, n: number): Float64Array;
}

/** The whole tensor as float64. */
export function whole(w: Float64Weights, name: string): Float64Array {
  const s = w.shape(name);
  return w.rows(name, 0, s.length === 1 ? 1 : s[0]);
}

function readAt(fd: number, offset: number, length: number): Buffer {
  const b = Buffer.alloc(length);
  let got = 0;
  while (got < length) got += fs.readSync(fd, b, got, length - got, offset + got);
  return b;
}

/** IEEE binary16 bits → number. */
export function halfToNumber(h: number): number {
  const e = (h >> 10) & 31, m = h & 1023, s = h & 0x8000 ? -1 : 1;
  return s * (e === 0 ? m * 2 ** -24 : e === 31 ? (m ? NaN : Infinity) : (1 + m / 1024) * 2 ** (e - 15));
}

/** Every binary16 bit pattern's value. */
const HALF = Float64Array.from({ length: 65536 }, (_, h) => halfToNumber(h));

/** A safetensors file (F32, F16 or BF16 tensors). */
export function safetensorsWeights(file: string): Float64Weights {
  const fd = fs.openSync(file, 'r');
  const n = Number(readAt(fd, 0, 8).readBigUInt64LE(0));
  const header = JSON.parse(readAt(fd, 8, n).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const entry = (name: string) => {
    const e = header[name];
    if (!e || name === '__metadata__') throw new Error(`${file} has no tensor ${name}`);
    return e;
  };
  return {
    shape: (name) => entry(name).shape,
    rows(name, start, count) {
      const e = entry(name);
      const cols = e.shape.length === 1 ? e.shape[0] : e.shape[1];
      const size = e.dtype === 'F32' ? 4 : 2;
      const b = readAt(fd, 8 + n + e.data_offsets[0] + start * cols * size, count * cols * size);
      const out = new Float64Array(count * cols);
      if (e.dtype === 'F32') for (let i = 0; i < out.length; i++) out[i] = b.readFloatLE(4 * i);
      else if (e.dtype === 'F16' || e.dtype === 'BF16') {
        // a fresh Buffer.alloc starts at offset 0 of its own ArrayBuffer: the halves can be viewed in place
        const h = new Uint16Array(b.buffer, b.byteOffset, out.length);
        if (e.dtype === 'F16') for (let i = 0; i < out.length; i++) out[i] = HALF[h[i]];
        else {
          const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
          for (let i = 0; i < out.length; i++) { u32[0] = h[i] << 16; out[i] = f32[0]; }
        }
      } else throw new Error(`${name}: dtype ${e.dtype} is not decoded here`);
      return out;
    },
  };
}

/** llama.cpp tensor names of the Llama layout → HF names (convert_hf_to_gguf.py's tensor map). */
function hfName(g: string): string {
  const top: Record<string, string> = { 'token_embd.weight': 'model.embed_tokens.weight', 'output_norm.weight': 'model.norm.weight', 'output.weight': 'lm_head.weight' };
  if (top[g]) return top[g];
  const m = /^blk\.(\d+)\.(\w+)\.weight$/.exec(g);
  const block: Record<string, string> = {
    attn_norm: 'input_layernorm', ffn_norm: 'post_attention_layernorm', attn_q: 'self_attn.q_proj', attn_k: 'self_attn.k_proj',
    attn_v: 'self_attn.v_proj', attn_output: 'self_attn.o_proj', ffn_gate: 'mlp.gate_proj', ffn_up: 'mlp.up_proj', ffn_down: 'mlp.down_proj',
  };
  if (!m || !block[m[2]]) throw new Error(`GGUF tensor ${g} has no HF name here`);
  return `model.layers.${m[1]}.${block[m[2]]}.weight`;
}

/**
 * A llama.cpp GGUF v3 file of the Llama architecture (F32, F16, Q8_0 and Q4_0 tensors). attn_q /
 * attn_k rows are returned in HF order: llama.cpp's permute stores HF row h·d + s·d/2 + j of head h
 * at GGUF row h·d + 2j + s (LlamaModel.permute: reshape(n_head, 2, d/2, ·).swapaxes(1, 2)).
 * @param nHeads, nKvHeads, dHead: the config's, to undo that permutation.
 */
export function ggufWeights(file: string, nHeads: number, nKvHeads: number, dHead: number): Float64Weights {
  const fd = fs.openSync(file, 'r');
  const head = readAt(fd, 0, Math.min(fs.fstatSync(fd).size, 16 << 20));
  let o = 0;
  const u32 = () => { const v = head.readUInt32LE(o); o += 4; return v; };
  const u64 = () => { const v = Number(head.readBigUInt64LE(o)); o += 8; return v; };
  const str = () => { const n = u64(); const s = head.subarray(o, o + n).toString('utf8'); o += n; return s; };
  if (head.subarray(0, 4).toString() !== 'GGUF') throw new Error(`${file} is not GGUF`);
  o = 4;
  if (u32() !== 3) throw new Error(`${file}: not GGUF version 3`);
  const nTensors = u64(), nKv = u64();
  let alignment = 32;
  const scalar: Record<number, [number, (at: number) => number]> = {
    0: [1, (a) => head.readUInt8(a)], 1: [1, (a) => head.readInt8(a)], 2: [2, (a) => head.readUInt16LE(a)], 3: [2, (a) => head.readInt16LE(a)],
    4: [4, (a) => head.readUInt32LE(a)], 5: [4, (a) => head.readInt32LE(a)], 6: [4, (a) => head.readFloatLE(a)], 7: [1, (a) => head.readUInt8(a)],
    10: [8, (a) => Number(head.readBigUInt64LE(a))], 11: [8, (a) => Number(head.readBigInt64LE(a))], 12: [8, (a) => head.readDoubleLE(a)],
  };
  const skip = (type: number): number => {
    if (type === 8) { str(); return 0; }
    if (type === 9) { const t = u32(), n = u64(); for (let i = 0; i < n; i++) skip(t); return 0; }
    const [size, read] = scalar[type];
    const v = read(o); o += size; return v;
  };
  for (let i = 0; i < nKv; i++) {
    const key = str(), type = u32(), v = skip(type);
    if (key === 'general.alignment') alignment = v;
  }
  const tensors = new Map<string, { shape: number[]; type: number; offset: number }>();
  for (let i = 0; i < nTensors; i++) {
    const name = str(), nd = u32();
    const ne = Array.from({ length: nd }, () => u64());
    const type = u32(), offset = u64();
    tensors.set(hfName(name), { shape: ne.reverse(), type, offset });
  }
  const dataStart = Math.ceil(o / alignment) * alignment;
  const entry = (name: string) => {
    const e = tensors.get(name);
    if (!e) throw new Error(`${file} has no tensor for ${name}`);
    return e;
  };
  /** Bytes of one row of `cols` values in ggml type `type`. */
  const rowBytes = (type: number, cols: number) => (type === 0 ? 4 * cols : type === 1 ? 2 * cols : type === 8 ? (cols / 32) * 34 : type === 2 ? (cols / 32) * 18 : NaN);
  const decodeRow = (b: Buffer, type: number, cols: number, out: Float64Array, at: number) => {
    if (type === 0) for (let i = 0; i < cols; i++) out[at + i] = b.readFloatLE(4 * i);
    else if (type === 1) for (let i = 0; i < cols; i++) out[at + i] = halfToNumber(b.readUInt16LE(2 * i));
    else if (type === 8) {
      // Q8_0: per 32 values, an f16 scale d and 32 int8 q; x = d·q
      for (let k = 0; k < cols / 32; k++) {
        const d = halfToNumber(b.readUInt16LE(34 * k));
        for (let i = 0; i < 32; i++) out[at + 32 * k + i] = d * b.readInt8(34 * k + 2 + i);
      }
    } else if (type === 2) {
      // Q4_0: per 32 values, an f16 scale d and 16 bytes; value i (< 16) is the low nibble of byte i, value 16 + i its high nibble; x = d·(q − 8)
      for (let k = 0; k < cols / 32; k++) {
        const d = halfToNumber(b.readUInt16LE(18 * k));
        for (let i = 0; i < 16; i++) {
          const q = b.readUInt8(18 * k + 2 + i);
          out[at + 32 * k + i] = d * ((q & 15) - 8);
          out[at + 32 * k + 16 + i] = d * ((q >> 4) - 8);
        }
      }
    } else throw new Error(`ggml type ${type} is not decoded here`);
  };
  return {
    shape: (name) => entry(name).shape,
    rows(name, start, count) {
      const e = entry(name);
      const cols = e.shape.length === 1 ? e.shape[0] : e.shape[1];
      const rb = rowBytes(e.type, cols);
      const heads = /q_proj/.test(name) ? nHeads : /k_proj/.test(name) ? nKvHeads : 0;
      const out = new Float64Array(count * cols);
      if (!heads) {
        const b = readAt(fd, dataStart + e.offset + start * rb, count * rb);
        for (let r = 0; r < count; r++) decodeRow(b.subarray(r * rb, (r + 1) * rb), e.type, cols, out, r * cols);
        return out;
      }
      for (let r = 0; r < count; r++) {
        let src = start + r;
        const h = Math.floor(src / dHead), within = src % dHead, s = within >= dHead / 2 ? 1 : 0, j = within - s * (dHead / 2);
        src = h * dHead + 2 * j + s;
        decodeRow(readAt(fd, dataStart + e.offset + src * rb, rb), e.type, cols, out, r * cols);
      }
      return out;
    },
  };
}
