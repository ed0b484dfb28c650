import type { Backend, FusedOps, LinearFusion, Tensor } from '../backend/backend';
import { blockWiring, planFusion, type BlockWiring, type FusionPlan } from './fusion_plan';
import type { LinearWeights, ModelSpec, ModelWeights, NormWeights } from '../arch/spec';
import { checkBlockWeights } from './spec_checks';
import { sparseMlp } from './moe';
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
 * (architecture differences are data, not code paths copied per family: the block's wiring is the
 * spec's gatedMlp, sandwichNorms, qkNorm and parallelResidual). Holds the weights and a KV cache
 * preallocated for `contextLength` positions (no per-step reallocation). Fused decode kernels are
 * chosen per block call by model/fusion_plan.ts.
 */
export class Transformer {
  private readonly kCache: Tensor[];
  private readonly vCache: Tensor[];
  /** The spec's block wiring, which every block call's FusionPlan starts from. */
  private readonly wiring: BlockWiring;
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
    this.wiring = blockWiring(spec);
    this.contextLength = Math.min(spec.nCtx, contextLength);
    const kvW = spec.nKvHeads * spec.dHead;
    this.kCache = Array.from({ length: spec.nLayers }, () => backend.zeros([this.contextLength, kvW]));
    this.vCache = Array.from({ length: spec.nLayers }, () => backend.zeros([this.contextLength, kvW]));
  }

  /** The spec's norm (RMSNorm with its offset, or LayerNorm) of each row: x [n, d] → [n, d]. */
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

  /**
   * One decoder block on the call's rows pos0..pos0+n−1, in the order of llama2.c `transformer()`
   * (and HF `*DecoderLayer.forward`): attention, residual, MLP, residual, firing the hooks
   * blocks.{l}.* (hooks.ts) where their values are made. The wiring is the spec's (gatedMlp,
   * sandwichNorms, qkNorm, parallelResidual); the fused kernels, the call's FusionPlan.
   * @param resid the residual stream [pos, d_model] (ownership passes to the block).
   * @returns hook_resid_post [pos, d_model].
   */
  private block(l: number, resid: Tensor, ctx: RunContext): Tensor {
    const s = this.spec, b = this.backend, bw = this.weights.blocks[l];
    const h = `blocks.${l}.`;
    const plan = planFusion(this.wiring, b.fused, ctx.site.n, (name) => ctx.touches(h + name));
    const x = ctx.fire(`${h}hook_resid_pre`, resid); // [pos, d_model]

    // attention: z = softmax(q·kᵀ·scale + mask)·v over the cached keys and values
    const q = this.queryKeyValue(l, x, plan, ctx); // [pos, n_heads·d_head]; k, v → KV cache rows pos0..
    const z = this.attend(l, q, ctx); // [pos, n_heads·d_head]

    // residual: resid_mid = x + attn_out (GPT-NeoX's parallel residual has none: the MLP reads x too)
    let attnOut: Tensor | null = null;
    let mid: Tensor | null = null;
    if (plan.attnOutResidual) {
      mid = ctx.fire(`${h}hook_resid_mid`, plan.ops!.linear(z, bw.o.w, bw.o.b, { residual: x })); // [pos, d_model]
      b.release(x);
    } else {
      attnOut = ctx.fire(`${h}hook_attn_out`, this.branchOut(z, bw.o, bw.postAttnNorm)); // [pos, d_model]
      if (!s.parallelResidual) {
        mid = ctx.fire(`${h}hook_resid_mid`, b.add(x, attnOut)); // [pos, d_model]
        b.release(x); b.release(attnOut);
        attnOut = null;
      }
    }
    b.release(z);

    // MLP: post = act(W_gate·ln2(·)) ⊙ W_up·ln2(·) (gated) or act(W_up·ln2(·)); a sparse layer's
    // mixture of experts (model/moe.ts) gives its output directly
    const post = bw.moe ? null : this.mlp(l, mid ?? x, plan, ctx); // [pos, d_mlp]

    // residual: resid_post = resid_mid + mlp_out (parallel: x + attn_out + mlp_out)
    let out: Tensor;
    if (post && plan.mlpOutResidual) {
      out = plan.ops!.linear(post, bw.down!.w, bw.down!.b, { residual: mid! });
      b.release(mid!);
    } else {
      const mlpOut = ctx.fire(`${h}hook_mlp_out`, post ? this.branchOut(post, bw.down!, bw.postMlpNorm) : this.sparse(l, mid ?? x, ctx)); // [pos, d_model]
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
    if (post) b.release(post);
    return ctx.fire(`${h}hook_resid_post`, out); // [pos, d_model]
  }

  /**
   * ln1 and the attention input: the fused q/k/v kernel where the plan allows it and the kernel
   * takes the case, else qkvSplit. Fires ln1.hook_normalized unless ln1 is folded.
   * @param x hook_resid_pre [pos, d_model] (not released).
   * @returns q [pos, n_heads·d_head], with k and v written into the KV cache rows pos0...
   */
  private queryKeyValue(l: number, x: Tensor, plan: FusionPlan, ctx: RunContext): Tensor {
    const s = this.spec, b = this.backend, bw = this.weights.blocks[l];
    const ln1 = plan.foldLn1 ? this.foldedNorm(bw.ln1) : undefined;
    const n1 = ln1 ? x : ctx.fire(`blocks.${l}.ln1.hook_normalized`, this.norm(x, bw.ln1)); // [pos, d_model]
    const rope = s.positional === 'rotary' ? { rotaryDims: s.rotaryDims, invFreq: s.invFreqPerLayer?.[l] ?? s.invFreq } : undefined;
    const fused = plan.qkv
      ? plan.ops!.qkv({ x: n1, q: bw.q, k: bw.k, v: bw.v, norm: ln1, rope, nHeads: s.nHeads, nKvHeads: s.nKvHeads, headDim: s.dHead, kCache: this.kCache[l], vCache: this.vCache[l], pos0: ctx.site.pos0 })
      : null;
    const q = fused ?? this.qkvSplit(l, n1, ln1 ? { ops: plan.ops!, norm: ln1 } : undefined, ctx);
    if (!ln1) b.release(n1);
    return q;
  }

  /**
   * Causal (optionally sliding-window, soft-capped) attention of q over the cache rows 0..pos0+n−1,
   * firing attn.hook_attn_scores and attn.hook_pattern [head, query_pos, key_pos] (made only when
   * captured) and attn.hook_z.
   * @param q [pos, n_heads·d_head] (released).
   * @returns z [pos, n_heads·d_head] (after hook_z).
   */
  private attend(l: number, q: Tensor, ctx: RunContext): Tensor {
    const s = this.spec, b = this.backend;
    const h = `blocks.${l}.`;
    const { pos0, n } = ctx.site;
    const att = b.attention(q, this.kCache[l], this.vCache[l], {
      n, past: pos0, nHeads: s.nHeads, nKvHeads: s.nKvHeads, headDim: s.dHead,
      scale: s.attnScale, softcap: s.attnSoftcap, window: s.windows[l],
      wantPattern: ctx.wants(`${h}attn.hook_pattern`), wantScores: ctx.wants(`${h}attn.hook_attn_scores`),
    });
    b.release(q);
    if (att.scores) b.release(ctx.fire(`${h}attn.hook_attn_scores`, att.scores)); // [head, query_pos, key_pos]
    if (att.pattern) b.release(ctx.fire(`${h}attn.hook_pattern`, att.pattern)); // [head, query_pos, key_pos]
    return ctx.fire(`${h}attn.hook_z`, att.z); // [pos, n_heads·d_head]
  }

  /**
   * ln2 and the MLP up to its activation, firing ln2.hook_normalized (unless folded), mlp.hook_pre
   * (the gate projection of a gated MLP; skipped by the fused act(gate)·up kernel) and mlp.hook_post;
   * the up projection of a gated MLP is handed to ctx.hold as `blocks.{l}.mlp.up` (not a hook).
   * @param xIn the MLP's input [pos, d_model]: resid_mid, or x with parallel residual (not released).
   * @returns hook_post [pos, d_mlp].
   */
  private mlp(l: number, xIn: Tensor, plan: FusionPlan, ctx: RunContext): Tensor {
    const s = this.spec, b = this.backend, bw = this.weights.blocks[l];
    const h = `blocks.${l}.`;
    const ln2: LinearFusion = plan.foldLn2 ? { norm: this.foldedNorm(bw.ln2) } : {};
    const n2 = plan.foldLn2 ? xIn : ctx.fire(`${h}ln2.hook_normalized`, this.norm(xIn, bw.ln2)); // [pos, d_model]
    let post: Tensor;
    if (plan.gateUp) {
      post = plan.ops!.linear(n2, bw.gate!.w, bw.gate!.b, { ...ln2, gateUp: { w: bw.up!.w, bias: bw.up!.b, act: s.act } }); // act(gate)·up in one
    } else {
      const lin = (p: LinearWeights): Tensor => (plan.foldLn2 ? plan.ops!.linear(n2, p.w, p.b, ln2) : b.linear(n2, p.w, p.b));
      const pre = ctx.fire(`${h}mlp.hook_pre`, lin(s.gatedMlp ? bw.gate! : bw.up!)); // [pos, d_mlp]
      if (s.gatedMlp) {
        const up = lin(bw.up!); // [pos, d_mlp]
        post = b.gatedAct(pre, up, s.act);
        if (!ctx.hold(`${h}mlp.up`, up)) b.release(up); // the backward's gatedActBackward reads it
      } else {
        post = b.act(pre, s.act);
      }
      b.release(pre);
    }
    if (!plan.foldLn2) b.release(n2);
    return ctx.fire(`${h}mlp.hook_post`, post); // [pos, d_mlp]
  }

  /**
   * ln2 (firing ln2.hook_normalized; never folded) and a sparse layer's mixture of experts
   * (model/moe.ts sparseMlp: the router hooks fire there).
   * @param xIn the MLP's input [pos, d_model] (not released).
   * @returns the MLP output [pos, d_model] (before hook_mlp_out; Gemma-style post norms do not occur with MoE).
   */
  private sparse(l: number, xIn: Tensor, ctx: RunContext): Tensor {
    const h = `blocks.${l}.`;
    const n2 = ctx.fire(`${h}ln2.hook_normalized`, this.norm(xIn, this.weights.blocks[l].ln2)); // [pos, d_model]
    const out = sparseMlp(this.backend, this.spec.moe!, this.weights.blocks[l].moe!, this.spec.act, n2, h, ctx);
    this.backend.release(n2);
    return out;
  }

  /**
   * A branch's output projection W·x + b [pos, d_model], then Gemma 2's sandwich norm
   * (post_attention_layernorm / post_feedforward_layernorm) when the spec has them.
   * @param x z [pos, n_heads·d_head] or post [pos, d_mlp] (not released).
   */
  private branchOut(x: Tensor, p: LinearWeights, postNorm: NormWeights | undefined): Tensor {
    const y = this.backend.linear(x, p.w, p.b);
    return this.spec.sandwichNorms ? this.swap(y, this.norm(y, postNorm!)) : y;
  }

  /** An RMSNorm as a fused kernel's prologue (LinearFusion.norm). */
  private foldedNorm(w: NormWeights): LinearFusion['norm'] {
    const s = this.spec;
    return { w: w.w, eps: s.normEps, offset: s.normOffset };
  }

  /**
   * The attention input op by op: q/k/v projections (ln1 folded in when `ln1` is given), QK-norm,
   * RoPE, the hooks hook_q/k/v, and k, v written into the KV cache rows pos0...
   * @param n1 ln1's output [pos, d_model], or hook_resid_pre when `ln1` folds the norm (not released).
   * @returns q [pos, n_heads·d_head] (after hook_q).
   */
  private qkvSplit(l: number, n1: Tensor, ln1: { ops: FusedOps; norm: LinearFusion['norm'] } | undefined, ctx: RunContext): Tensor {
    const s = this.spec, b = this.backend, bw = this.weights.blocks[l];
    const h = `blocks.${l}.`;
    const { pos0 } = ctx.site;
    const proj = (p: LinearWeights): Tensor => (ln1 ? ln1.ops.linear(n1, p.w, p.b, { norm: ln1.norm }) : b.linear(n1, p.w, p.b));
    let q = proj(bw.q); // [pos, n_heads·d_head]
    let k = proj(bw.k); // [pos, n_kv_heads·d_head]
    const v0 = proj(bw.v); // [pos, n_kv_heads·d_head]
    if (s.qkNorm) {
      // per-head RMSNorm over d_head (Qwen3 / Gemma 3 q_norm, k_norm), before RoPE
      q = this.swap(q, b.rmsNorm(q, bw.qNorm!, s.normEps, s.normOffset));
      k = this.swap(k, b.rmsNorm(k, bw.kNorm!, s.normEps, s.normOffset));
    }
    if (s.positional === 'rotary') {
      const invFreq = s.invFreqPerLayer?.[l] ?? s.invFreq;
      q = this.swap(q, b.rope(q, s.nHeads, s.dHead, s.rotaryDims, pos0, invFreq));
      k = this.swap(k, b.rope(k, s.nKvHeads, s.dHead, s.rotaryDims, pos0, invFreq));
    }
    q = ctx.fire(`${h}attn.hook_q`, q); // [pos, n_heads·d_head]
    k = ctx.fire(`${h}attn.hook_k`, k); // [pos, n_kv_heads·d_head]
    const v = ctx.fire(`${h}attn.hook_v`, v0); // [pos, n_kv_heads·d_head]
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
