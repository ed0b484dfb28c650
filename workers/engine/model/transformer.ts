import type { Backend, LinearFusion, Tensor } from '../backend/backend';
import type { BlockWeights, ModelSpec, ModelWeights, NormWeights } from './spec';
import { checkBlockWeights } from './spec_checks';
import type { RunContext } from './run_context';

/**
 * Positions the KV cache holds by default. Models declare contexts up to 131072
 * (max_position_embeddings), whose full cache would need gigabytes; interpretability prompts are
 * short, so the cache is allocated for min(n_ctx, this) unless a longer context is asked for.
 */
export const DEFAULT_CONTEXT_LENGTH = 4096;

/** KV-cache rows [0, rows) of every layer, copied out (Transformer.snapshotKv). */
export interface KvSnapshot {
  rows: number;
  /** Per layer [rows, n_kv_heads·d_head]. */
  k: Tensor[];
  v: Tensor[];
}

/** Which rows of the final logits a forward call computes. */
export type LogitRows = 'all' | 'last' | 'none';

/**
 * The one shared decoder-only transformer forward pass, parameterised by a ModelSpec
 * (architecture differences are data, not code paths copied per family). Holds the weights and a
 * KV cache preallocated for `contextLength` positions (no per-step reallocation).
 */
export class Transformer {
  private readonly kCache: Tensor[];
  private readonly vCache: Tensor[];
  /** Positions the KV cache holds: min(n_ctx, the requested length). */
  readonly contextLength: number;
  /**
   * Bumped by every forward call and restoreKv (each writes cache rows), so a holder of cached
   * rows (model/kv_prefix.ts) can tell that another run has overwritten them since.
   */
  kvVersion = 0;
  /**
   * Positions pushed through the model since load, summed over forward calls (the rows each call
   * computed): lets a test prove that a run reused a cached prefix instead of recomputing it.
   */
  positionsRun = 0;

  /**
   * @param contextLength KV-cache positions to allocate (default min(n_ctx, DEFAULT_CONTEXT_LENGTH)).
   * @throws Error when a block's weights disagree with the spec's gatedMlp, sandwichNorms or qkNorm
   *   (checkBlockWeights), before the KV cache is allocated.
   */
  constructor(readonly backend: Backend, readonly spec: ModelSpec, readonly weights: ModelWeights, contextLength = DEFAULT_CONTEXT_LENGTH) {
    checkBlockWeights(spec, weights);
    this.contextLength = Math.min(spec.nCtx, contextLength);
    const kvW = spec.nKvHeads * spec.dHead;
    this.kCache = Array.from({ length: spec.nLayers }, () => backend.zeros([this.contextLength, kvW]));
    this.vCache = Array.from({ length: spec.nLayers }, () => backend.zeros([this.contextLength, kvW]));
  }

  private norm(x: Tensor, w: NormWeights): Tensor {
    const s = this.spec;
    return s.norm === 'rms' ? this.backend.rmsNorm(x, w.w, s.normEps, s.normOffset) : this.backend.layerNorm(x, w.w, w.b, s.normEps);
  }

  /**
   * Applies the final norm (recomputed on these vectors, never reusing a cached scale) and the
   * unembedding, with final soft-capping where the model has it.
   * @param x [n, d_model] residual vectors (any layer: this is the logit lens when x is not the last).
   * @returns logits [n, d_vocab].
   */
  unembed(x: Tensor, ctx?: RunContext): Tensor {
    const b = this.backend, w = this.weights;
    let nf = this.norm(x, w.lnFinal);
    if (ctx) nf = ctx.fire('ln_final.hook_normalized', nf);
    let logits = b.linear(nf, w.unembed, w.unembedBias);
    b.release(nf);
    if (this.spec.finalSoftcap > 0) {
      const capped = b.softcap(logits, this.spec.finalSoftcap);
      b.release(logits);
      logits = capped;
    }
    return ctx ? ctx.fire('logits', logits) : logits;
  }

  /**
   * Runs ids at absolute positions ctx.site.pos0.. through the model, writing their keys and values
   * into the KV cache (positions before pos0 must already be cached by earlier calls).
   * @param ids token ids [n].
   * @returns logits [n, d_vocab] ('all'), [1, d_vocab] ('last') or null ('none').
   * @throws Error when the sequence would exceed the context (max_position_embeddings, or the KV cache).
   */
  forward(ids: Int32Array, ctx: RunContext, logitRows: LogitRows = 'all'): Tensor | null {
    const s = this.spec, b = this.backend, w = this.weights;
    const { pos0 } = ctx.site;
    const n = ids.length;
    if (pos0 + n > this.contextLength) throw new Error(contextMessage(pos0 + n, s.nCtx, this.contextLength));
    this.kvVersion++;
    this.positionsRun += n;
    // hook_embed [pos, d_model]: W_E[ids] (× sqrt(d_model) for Gemma)
    let resid = ctx.fire('hook_embed', b.embed(w.embed, ids, s.embedScale));
    if (w.posEmbed) {
      // hook_pos_embed [pos, d_model]: W_pos[pos0..pos0+n-1]
      const pe = ctx.fire('hook_pos_embed', b.sliceRows(w.posEmbed, pos0, n));
      const sum = b.add(resid, pe);
      b.release(resid); b.release(pe);
      resid = sum;
    }
    for (let l = 0; l < s.nLayers; l++) resid = this.block(l, resid, ctx);
    if (logitRows === 'none') { b.release(resid); return null; }
    if (logitRows === 'last' && n > 1) {
      const last = b.sliceRows(resid, n - 1, 1);
      b.release(resid);
      resid = last;
    }
    const logits = this.unembed(resid, ctx);
    b.release(resid);
    return logits;
  }

  private block(l: number, resid: Tensor, ctx: RunContext): Tensor {
    const s = this.spec, b = this.backend, bw: BlockWeights = this.weights.blocks[l];
    const h = `blocks.${l}.`;
    const { pos0, n } = ctx.site;
    const x = ctx.fire(`${h}hook_resid_pre`, resid); // [pos, d_model]
    // Fused decode kernels (backend.fused) replace op chains whose intermediate hooks nobody
    // captures or intervenes on: a touched hook splits the fusion there (same values either way).
    const fz = b.fused && n <= b.fused.maxRows ? b.fused : null;
    const foldNorm = (hook: string, w: NormWeights): LinearFusion['norm'] | undefined =>
      fz?.foldsNorm && s.norm === 'rms' && !ctx.touches(hook) ? { w: w.w, eps: s.normEps, offset: s.normOffset } : undefined;

    // --- attention ---
    const ln1 = foldNorm(`${h}ln1.hook_normalized`, bw.ln1);
    const n1 = ln1 ? x : ctx.fire(`${h}ln1.hook_normalized`, this.norm(x, bw.ln1)); // [pos, d_model]
    const invFreq = s.invFreqPerLayer?.[l] ?? s.invFreq;
    // q, k, v, RoPE and the KV-cache write in one dispatch when hook_q/k/v are untouched (QK-norm
    // models take the split ops: the per-head norm needs a whole head's outputs)
    const splitQkv = !fz || !!bw.qNorm || ['q', 'k', 'v'].some((t) => ctx.touches(`${h}attn.hook_${t}`));
    let q = splitQkv ? null : fz!.qkv({
      x: n1, q: bw.q, k: bw.k, v: bw.v, norm: ln1, rope: s.positional === 'rotary' ? { rotaryDims: s.rotaryDims, invFreq } : undefined,
      nHeads: s.nHeads, nKvHeads: s.nKvHeads, headDim: s.dHead, kCache: this.kCache[l], vCache: this.vCache[l], pos0,
    });
    if (!q) q = this.qkvSplit(l, n1, ln1, ctx);
    if (!ln1) b.release(n1);
    const wantPattern = ctx.wants(`${h}attn.hook_pattern`);
    const wantScores = ctx.wants(`${h}attn.hook_attn_scores`);
    const att = b.attention(q, this.kCache[l], this.vCache[l], {
      n, past: pos0, nHeads: s.nHeads, nKvHeads: s.nKvHeads, headDim: s.dHead,
      scale: s.attnScale, softcap: s.attnSoftcap, window: s.windows[l], wantPattern, wantScores,
    });
    b.release(q);
    if (att.scores) b.release(ctx.fire(`${h}attn.hook_attn_scores`, att.scores)); // [head, query, key]
    if (att.pattern) b.release(ctx.fire(`${h}attn.hook_pattern`, att.pattern)); // [head, query, key]
    const z = ctx.fire(`${h}attn.hook_z`, att.z); // [pos, n_heads·d_head]

    // resid_mid = x + W_O·z: the add folds into the projection's epilogue when hook_attn_out is untouched
    let mid: Tensor | null = null;
    let attnOut: Tensor | null = null;
    if (fz && !s.parallelResidual && !bw.postAttnNorm && !ctx.touches(`${h}hook_attn_out`)) {
      mid = ctx.fire(`${h}hook_resid_mid`, fz.linear(z, bw.o.w, bw.o.b, { residual: x })); // [pos, d_model]
      b.release(x);
    } else {
      attnOut = b.linear(z, bw.o.w, bw.o.b);
      if (bw.postAttnNorm) attnOut = this.swap(attnOut, this.norm(attnOut, bw.postAttnNorm));
      attnOut = ctx.fire(`${h}hook_attn_out`, attnOut); // [pos, d_model]
      if (!s.parallelResidual) {
        mid = ctx.fire(`${h}hook_resid_mid`, b.add(x, attnOut)); // [pos, d_model]
        b.release(x); b.release(attnOut);
        attnOut = null;
      }
    }
    b.release(z);

    // --- MLP --- (GPT-NeoX's parallel residual: both branches read x; no hook_resid_mid)
    const mlpIn = mid ?? x;
    const ln2 = foldNorm(`${h}ln2.hook_normalized`, bw.ln2);
    const n2 = ln2 ? mlpIn : ctx.fire(`${h}ln2.hook_normalized`, this.norm(mlpIn, bw.ln2)); // [pos, d_model]
    const ln2Fusion: LinearFusion = ln2 ? { norm: ln2 } : {};
    let post: Tensor;
    if (bw.gate && fz && !ctx.touches(`${h}mlp.hook_pre`)) {
      post = fz.linear(n2, bw.gate.w, bw.gate.b, { ...ln2Fusion, gateUp: { w: bw.up.w, bias: bw.up.b, act: s.act } }); // act(gate)·up in one
    } else {
      const lin = (p: { w: Tensor; b?: Tensor }): Tensor => (ln2 ? fz!.linear(n2, p.w, p.b, ln2Fusion) : b.linear(n2, p.w, p.b));
      const pre = ctx.fire(`${h}mlp.hook_pre`, lin(bw.gate ?? bw.up)); // [pos, d_mlp]
      if (bw.gate) {
        const upv = lin(bw.up);
        post = b.gatedAct(pre, upv, s.act);
        b.release(upv);
      } else {
        post = b.act(pre, s.act);
      }
      b.release(pre);
    }
    if (!ln2) b.release(n2);
    post = ctx.fire(`${h}mlp.hook_post`, post); // [pos, d_mlp]

    // resid_post = resid_mid + W_out·post (the add folded when hook_mlp_out is untouched)
    let out: Tensor;
    if (mid && fz && !bw.postMlpNorm && !ctx.touches(`${h}hook_mlp_out`)) {
      out = fz.linear(post, bw.down.w, bw.down.b, { residual: mid });
      b.release(mid);
    } else {
      let mlpOut = b.linear(post, bw.down.w, bw.down.b);
      if (bw.postMlpNorm) mlpOut = this.swap(mlpOut, this.norm(mlpOut, bw.postMlpNorm));
      mlpOut = ctx.fire(`${h}hook_mlp_out`, mlpOut); // [pos, d_model]
      if (mid) {
        out = b.add(mid, mlpOut);
        b.release(mid);
      } else {
        const t = b.add(x, attnOut!);
        out = b.add(t, mlpOut);
        b.release(t); b.release(x); b.release(attnOut!);
      }
      b.release(mlpOut);
    }
    b.release(post);
    return ctx.fire(`${h}hook_resid_post`, out); // [pos, d_model]
  }

  /**
   * The attention input op by op: q/k/v projections (ln1 folded in when `ln1` is given), QK-norm,
   * RoPE, the hooks hook_q/k/v, and k, v written into the KV cache rows pos0...
   * @returns q [pos, n_heads·d_head] (after hook_q).
   */
  private qkvSplit(l: number, n1: Tensor, ln1: LinearFusion['norm'], ctx: RunContext): Tensor {
    const s = this.spec, b = this.backend, bw = this.weights.blocks[l];
    const h = `blocks.${l}.`;
    const { pos0 } = ctx.site;
    const proj = (p: { w: Tensor; b?: Tensor }): Tensor => (ln1 ? b.fused!.linear(n1, p.w, p.b, { norm: ln1 }) : b.linear(n1, p.w, p.b));
    let q = proj(bw.q); // [pos, n_heads·d_head]
    let k = proj(bw.k); // [pos, n_kv_heads·d_head]
    const v0 = proj(bw.v);
    if (bw.qNorm && bw.kNorm) {
      q = this.swap(q, b.rmsNorm(q, bw.qNorm, s.normEps, s.normOffset));
      k = this.swap(k, b.rmsNorm(k, bw.kNorm, s.normEps, s.normOffset));
    }
    if (s.positional === 'rotary') {
      const invFreq = s.invFreqPerLayer?.[l] ?? s.invFreq;
      q = this.swap(q, b.rope(q, s.nHeads, s.dHead, s.rotaryDims, pos0, invFreq));
      k = this.swap(k, b.rope(k, s.nKvHeads, s.dHead, s.rotaryDims, pos0, invFreq));
    }
    q = ctx.fire(`${h}attn.hook_q`, q);
    k = ctx.fire(`${h}attn.hook_k`, k);
    const v = ctx.fire(`${h}attn.hook_v`, v0);
    b.writeRows(this.kCache[l], k, pos0);
    b.writeRows(this.vCache[l], v, pos0);
    b.release(k); b.release(v);
    return q;
  }

  /** Releases `old` and returns `next` (keeps the op chains above readable). */
  private swap(old: Tensor, next: Tensor): Tensor {
    this.backend.release(old);
    return next;
  }

  /**
   * Copies KV-cache rows [0, rows) of every layer (keys and values [rows, n_kv_heads·d_head]).
   * The caller owns the snapshot: restore it with restoreKv and free it with releaseKv.
   * @throws Error when rows is not an integer in [1, contextLength].
   */
  snapshotKv(rows: number): KvSnapshot {
    if (!Number.isInteger(rows) || rows < 1 || rows > this.contextLength) throw new Error(`snapshotKv: ${rows} rows is outside 1..${this.contextLength}`);
    const b = this.backend;
    return { rows, k: this.kCache.map((c) => b.sliceRows(c, 0, rows)), v: this.vCache.map((c) => b.sliceRows(c, 0, rows)) };
  }

  /** Writes a snapshot's rows back to cache rows [0, snap.rows) (rows after them are left as they are). */
  restoreKv(snap: KvSnapshot): void {
    this.kvVersion++;
    for (let l = 0; l < this.spec.nLayers; l++) {
      this.backend.writeRows(this.kCache[l], snap.k[l], 0);
      this.backend.writeRows(this.vCache[l], snap.v[l], 0);
    }
  }

  /** Frees a snapshot's tensors. */
  releaseKv(snap: KvSnapshot): void {
    for (const t of [...snap.k, ...snap.v]) this.backend.release(t);
  }

  /** Frees the weights' KV cache. (Weights are freed with the backend, or by releaseWeights.) */
  dispose(): void {
    for (const t of [...this.kCache, ...this.vCache]) this.backend.release(t);
  }

  /**
   * Frees every weight tensor (each once: a tied W_U is W_E) on a backend that outlives this model,
   * so a temporary model (the float32 probe of model/quant_error.ts) leaves no weight buffers behind;
   * follow with Backend.trimPool to give WebGPU's pooled buffers back. The model is unusable after.
   */
  releaseWeights(): void {
    for (const t of weightTensors(this.weights)) this.backend.release(t);
  }
}

/** The message for a sequence that does not fit: names max_position_embeddings, and the cache size when that is the limit. */
export function contextMessage(tokens: number, nCtx: number, contextLength: number): string {
  return contextLength < nCtx
    ? `${tokens} tokens are longer than the working context of ${contextLength} tokens (the KV cache this session allocated; the model's max_position_embeddings is ${nCtx})`
    : `${tokens} tokens are longer than the model's context of ${nCtx} tokens (max_position_embeddings)`;
}

/**
 * Every tensor the weights hold, each once (a tied W_U is W_E), found by walking the object rather
 * than listing ModelWeights / BlockWeights fields by hand, so a field added to either is released
 * too. A tensor is a leaf (its storage is not walked). Order: first reached first.
 */
export function weightTensors(w: ModelWeights): Set<Tensor> {
  const all = new Set<Tensor>();
  const visit = (x: unknown): void => {
    if (x === null || typeof x !== 'object' || ArrayBuffer.isView(x)) return;
    if (isTensor(x)) { all.add(x); return; }
    for (const v of Object.values(x)) visit(v);
  };
  visit(w);
  return all;
}

/** A backend tensor (backend.ts Tensor: a shape and its size), not a container of weights. */
function isTensor(x: object): x is Tensor {
  return Array.isArray((x as Tensor).shape) && typeof (x as Tensor).size === 'number';
}
