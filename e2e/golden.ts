/**
 * Golden numbers for the end-to-end tests, computed here in float64 from the reference arrays of
 * ../shared/models/stories260K (see its reference/README.md), never from the app.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeTensor, parseSafetensors } from '../workers/engine/io/safetensors';

/** ../shared (or $BRANCHPOINT_SHARED), as vite.config.ts serves it; fails loudly when absent. */
export const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? fileURLToPath(new URL('../../shared', import.meta.url)));
export const STORIES = path.join(SHARED, 'models', 'stories260K');
if (!fs.existsSync(path.join(STORIES, 'config.json'))) throw new Error(`stories260K not found at ${STORIES}: set BRANCHPOINT_SHARED to the shared/ folder`);

export interface Tensor {
  data: Float32Array;
  shape: number[];
}

/** Every tensor of a safetensors file. */
export function readTensors(file: string): Map<string, Tensor> {
  const bytes = new Uint8Array(fs.readFileSync(file));
  const h = parseSafetensors(bytes, path.basename(file));
  const out = new Map<string, Tensor>();
  for (const [name, e] of h.tensors) out.set(name, { data: decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype), shape: e.shape });
  return out;
}

export interface ReferencePrompt {
  name: string;
  prompt: string;
  input_ids: number[];
  n_prompt: number;
  n_positions: number;
  greedy_ids: number[];
  continuation_text: string;
}

/** The golden prompt of stories260K with this text (reference.json). */
export function referencePrompt(prompt: string): ReferencePrompt {
  const ref = JSON.parse(fs.readFileSync(path.join(STORIES, 'reference', 'reference.json'), 'utf8')) as { prompts: ReferencePrompt[] };
  const p = ref.prompts.find((x) => x.prompt === prompt);
  if (!p) throw new Error(`no golden prompt "${prompt}" in reference.json`);
  return p;
}

/**
 * The logit lens of stories260K on a golden prompt, restricted to the prompt positions:
 * log_softmax(W_U · RMSNorm(h^l_t)) with h^0 = embeddings and h^l = resid_post[l−1], RMSNorm
 * w·x/√(mean x² + 1e-5) with model.norm.weight, W_U = lm_head.weight (reference/README.md).
 */
export class Lens {
  readonly L: number;
  readonly D: number;
  readonly V: number;
  readonly nPrompt: number;
  private readonly ref: Map<string, Tensor>;
  private readonly norm: Float32Array;
  private readonly wu: Float32Array;
  private readonly T: number;

  constructor(readonly golden: ReferencePrompt) {
    const model = readTensors(path.join(STORIES, 'model.safetensors'));
    this.ref = readTensors(path.join(STORIES, 'reference', `${golden.name}.safetensors`));
    this.norm = model.get('model.norm.weight')!.data;
    const wu = model.get('lm_head.weight')!;
    this.wu = wu.data;
    [this.V, this.D] = wu.shape;
    const rp = this.ref.get('resid_post')!;
    [this.L, this.T] = rp.shape;
    this.nPrompt = golden.n_prompt;
  }

  /** h^l_t (l = 0: embeddings). */
  private resid(l: number, t: number): Float32Array {
    const D = this.D;
    return l === 0
      ? this.ref.get('embeddings')!.data.subarray(t * D, (t + 1) * D)
      : this.ref.get('resid_post')!.data.subarray(((l - 1) * this.T + t) * D, ((l - 1) * this.T + t + 1) * D);
  }

  /** log_softmax(W_U · RMSNorm(h^l_t)) [V], in float64. */
  logProbs(l: number, t: number): Float64Array {
    const h = this.resid(l, t), D = this.D, V = this.V;
    let ss = 0;
    for (const v of h) ss += v * v;
    const r = 1 / Math.sqrt(ss / D + 1e-5);
    const x = Array.from(h, (v, i) => v * r * this.norm[i]);
    const logits = new Float64Array(V);
    for (let v = 0; v < V; v++) {
      let s = 0;
      for (let i = 0; i < D; i++) s += this.wu[v * D + i] * x[i];
      logits[v] = s;
    }
    const m = Math.max(...logits);
    let z = 0;
    for (const v of logits) z += Math.exp(v - m);
    const lse = m + Math.log(z);
    return logits.map((v) => v - lse);
  }

  /** Δ^l_t = log p(good) − log p(bad) for single first tokens. */
  margin(l: number, t: number, good: number, bad: number): number {
    const lp = this.logProbs(l, t);
    return lp[good] - lp[bad];
  }

  /** α^{l,h}_0 over the prompt: mean over queries i < n_prompt of attn_probs[l, h, i, 0]. */
  alpha0(l: number, h: number): number {
    const a = this.ref.get('attn_probs')!;
    const [, H, T] = a.shape;
    let s = 0;
    for (let i = 0; i < this.nPrompt; i++) s += a.data[((l * H + h) * T + i) * T];
    return s / this.nPrompt;
  }

  /** attn_probs[l, h, i, j]. */
  attention(l: number, h: number, i: number, j: number): number {
    const a = this.ref.get('attn_probs')!;
    const [, H, T] = a.shape;
    return a.data[((l * H + h) * T + i) * T + j];
  }
}

/** A number as the app prints it ("−1.2345" with a real minus sign, or "+0.5"). */
export function parseShown(text: string | null): number {
  const v = Number((text ?? '').trim().replace('−', '-').replace(/^\+/, ''));
  if (!Number.isFinite(v)) throw new Error(`"${text}" is not a number`);
  return v;
}

/**
 * The first token of `future` as it is tokenized after `prompt` (the token that follows the prompt's
 * tokens in encode(prompt + future)), with transformers.js reading stories260K's tokenizer.json.
 */
export async function firstTokenAfter(prompt: string, future: string): Promise<{ promptIds: number[]; id: number }> {
  const { AutoTokenizer, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = path.join(SHARED, 'models') + path.sep;
  const tok = await AutoTokenizer.from_pretrained('stories260K');
  const promptIds = tok.encode(prompt);
  const full = tok.encode(prompt + future);
  if (!promptIds.every((id, i) => full[i] === id)) throw new Error(`"${future}" changes the tokens of the prompt`);
  return { promptIds, id: full[promptIds.length] };
}
