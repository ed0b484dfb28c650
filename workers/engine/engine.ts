import type { PreTrainedTokenizer } from '@huggingface/transformers';
import type { Backend, Tensor } from './backend/backend';
import type { HFConfig } from './arch/types';
import type { ModelSpec } from './arch/spec';
import { MODEL_INFO_FIELDS } from './api';
import type { Analysis, AnalyseRequest, Generation, GenerateRequest, ModelInfo, TokenEvent } from './api';
import { adaptTokenizer, PromptCodec, type FutureInput, type PromptInput, type ResolvedFuture } from './prompt';
import { assertHook, hookNames } from './model/hooks';
import type { ModelFiles } from './io/model_files';
import type { LoadProgress } from './model/load';
import { loadWithStorage, measureLogitError, probeIds, type LogitError, type StorageLoadOptions, type WeightStorage } from './model/quant_error';
import { isQuantFormat } from './model/quant_storage';
import { WebGpuBackend } from './backend/webgpu';
import type { Intervention } from './model/intervention';
import { RunContext } from './model/run_context';
import { splitSaeHook, type SaeAttachment } from './model/sae_site';
import type { Transformer } from './model/transformer';
import { checkVocabulary, loadTokenizer } from './tokenizer';
import { lensMargins, LensStacks, lensTopK, type LensTop } from './model/lens';
import { sinkStats } from './analysis/sinks';
import { residualStats } from './analysis/residual';
import { assertFiniteRun } from './model/span';
import { firstNonFinite } from './analysis/finite';
import { NonFiniteError } from './model/non_finite';
import { warmUpGeneration } from './model/warm_up';
import { generateTokens, teacherForcedMargin, type Decoder, type ReadRequest, type StepCapture } from './decode';
import { logSoftmaxCpu } from './ops/logits.cpu';

/** Options of one low-level run (see Engine.run). */
export interface RunOptions {
  /** Hook names to capture (exact names). */
  capture?: readonly string[];
  interventions?: readonly Intervention[];
  /** Prompt length for 'prompt' / 'generated' selectors (default: ids.length). */
  nPrompt?: number;
  /** Logit rows to compute: 'all' [T, V] (default) or 'last' [1, V] (skips W_U on the other rows). */
  logits?: 'all' | 'last';
  /** SAEs attached at their hooks: their hooks (`<hook>.hook_sae_acts_post`, …) can be captured; spliced ones replace the activation by x̂ (model/sae_site.ts). */
  saes?: readonly SaeAttachment[];
}

/**
 * A loaded model with its tokenizer: the library face of the engine, used by the inference worker,
 * the command-line runner and the tests. No DOM, no React.
 */
export class Engine {
  /** Warnings found at load (e.g. a tokenizer much smaller than the embedding matrix); promptWarnings repeats them. */
  readonly loadWarnings: string[] = [];
  private lost: string | null = null;
  private lostCallback: ((reason: string) => void) | null = null;
  private disposed = false;
  /** Residual stacks of the latest analyses, for lens top tokens on demand (lensTop). */
  private readonly lensStacks = new LensStacks();
  /** Prompts and futures ↔ token ids over this model's tokenizer (prompt.ts). */
  readonly prompts: PromptCodec;
  /** What teacher-forced futures and generation run on (decode.ts). */
  private readonly decoder: Decoder;

  private constructor(
    readonly backend: Backend,
    readonly model: Transformer,
    readonly config: HFConfig,
    readonly tokenizer: PreTrainedTokenizer,
    readonly label: string,
  ) {
    const s = model.spec;
    this.prompts = new PromptCodec(adaptTokenizer(tokenizer), { label, dVocab: s.dVocab, bosTokenId: s.bosTokenId, nCtx: s.nCtx, contextLength: model.contextLength }, this.loadWarnings);
    this.decoder = { model, backend, prompts: this.prompts, assertFinite: (...a) => this.assertFinite(...a) };
    if (backend instanceof WebGpuBackend) {
      void backend.lost.then(() => {
        if (this.disposed) return; // dispose() destroys the device on purpose
        this.lost = backend.lostReason ?? 'unknown reason';
        this.lostCallback?.(this.lost);
      });
    }
  }

  /**
   * Loads config, weights and tokenizer from a model folder.
   * @param options weight storage (float32, or matrices as binary16) and the KV-cache positions
   *   to allocate (default 4096, capped at max_position_embeddings): model/load.ts TransformerOptions;
   *   warmUp: compile the GPU pipelines generation uses before 'ready' (model/warm_up.ts; the UI's
   *   worker sets it, so the first generation does not stall the page).
   * @throws Error (readable) for a missing tokenizer/config/checkpoint, an unsupported model_type,
   *   a malformed safetensors file, or a contextLength that is not a positive integer.
   */
  static async load(files: ModelFiles, backend: Backend, onProgress?: (p: LoadProgress) => void, options: StorageLoadOptions & { warmUp?: boolean } = {}): Promise<Engine> {
    if (!(await files.has('tokenizer.json'))) throw new Error(`${files.label}: tokenizer.json is missing (the tokenizer is needed to read prompts)`);
    let tokenizer: PreTrainedTokenizer | null = null;
    // a quantised load tokenises its probe prompt first (model/quant_error.ts)
    const encode = (text: string): number[] => tokenizer!.encode(text, { add_special_tokens: true });
    if (options.weightDtype === 'q8_0' || options.weightDtype === 'q4_0') tokenizer = await loadTokenizer(files);
    const { config, model, storage } = await loadWithStorage(files, backend, encode, onProgress, options);
    onProgress?.({ stage: 'tokenizer' });
    tokenizer ??= await loadTokenizer(files);
    const loadWarnings = checkVocabulary(tokenizer, model.spec.dVocab, files.label);
    if (options.warmUp && backend instanceof WebGpuBackend) {
      onProgress?.({ stage: 'kernels' });
      await warmUpGeneration(model, backend);
    }
    onProgress?.({ stage: 'ready' });
    const e = new Engine(backend, model, config, tokenizer, files.label);
    e.loadWarnings.push(...loadWarnings);
    e.weightStorage = storage;
    if (options.measureLogitError === 'on-demand' && isQuantFormat(storage.dtype) && !storage.unmeasured) e.float32Files = files;
    return e;
  }

  /** How the weights are stored and, when quantised, the measured logit error against float32. */
  weightStorage: WeightStorage = { dtype: 'f32', description: 'float32' };
  /** The checkpoint to read float32 weights from for a logit error measured on demand (logitErrorVsF32). */
  private float32Files: ModelFiles | null = null;

  /**
   * The quantised weights' logit error against float32 on the probe prompt (model/quant_error.ts),
   * measured on the first call after a load with measureLogitError 'on-demand' and kept in
   * weightStorage.logitError; later calls return it.
   * @throws Error saying why when there is nothing to measure (float32 or binary16 weights, a GGUF
   *   file, a model whose float32 weights would not fit) or the float32 load fails.
   */
  async logitErrorVsF32(): Promise<LogitError> {
    if (this.weightStorage.logitError) return this.weightStorage.logitError;
    if (!this.float32Files) throw new Error(this.weightStorage.unmeasured ?? `the weights are ${this.weightStorage.description}: there is no quantisation error to measure`);
    const ids = probeIds((text) => this.prompts.tokenizer.encode(text, true), this.model.contextLength);
    this.weightStorage.logitError = await measureLogitError(this.float32Files, this.backend, this.model, ids);
    this.float32Files = null;
    return this.weightStorage.logitError;
  }

  /**
   * Why the GPU device was lost (driver reset, another tab's crash, device.destroy()), or null
   * while it works (always null on the CPU backend; never set by dispose()). Once set, every
   * GPU op throws "GPU device lost …": load the model again on a new backend.
   */
  get deviceLost(): string | null { return this.lost; }

  /** Calls `f` with the reason when the device is lost (at once if it already was); replaces an earlier callback. */
  onDeviceLost(f: (reason: string) => void): void {
    this.lostCallback = f;
    if (this.lost !== null) f(this.lost);
  }

  get spec() { return this.model.spec; }

  info(): ModelInfo {
    const s = this.spec;
    return {
      ...(Object.fromEntries(MODEL_INFO_FIELDS.map((k) => [k, s[k]])) as Pick<ModelSpec, (typeof MODEL_INFO_FIELDS)[number]>),
      label: this.label, contextLength: this.model.contextLength,
      backend: { kind: this.backend.kind, description: this.backend.description },
      hookNames: hookNames(s),
      hasChatTemplate: this.prompts.tokenizer.hasChatTemplate,
      byteTokens: this.prompts.byteTokens(),
      weights: this.weightStorage,
    };
  }

  /** Prompt → ids (PromptCodec.encodePrompt). @throws Error for an empty prompt, one longer than the context, or a chat template that is missing or fails. */
  encodePrompt(p: PromptInput, opts: { anyLength?: boolean } = {}): number[] { return this.prompts.encodePrompt(p, opts); }

  /** Why a prompt of `n` tokens cannot run, or null when it fits (PromptCodec.promptTooLong). */
  promptTooLong(n: number): string | null { return this.prompts.promptTooLong(n); }

  /** The load's warnings and a doubled BOS (PromptCodec.promptWarnings). */
  promptWarnings(p: PromptInput): string[] { return this.prompts.promptWarnings(p); }

  /** Display string of each token, leading spaces kept (PromptCodec.tokenStrings). */
  tokenStrings(ids: readonly number[], prefix: readonly number[] = []): string[] { return this.prompts.tokenStrings(ids, prefix); }

  /** A future → token sequences, text tokenized in context (PromptCodec.resolveFuture). @throws Error for an empty future or an id outside the vocabulary. */
  resolveFuture(promptIds: readonly number[], f: FutureInput, prompt: PromptInput, name?: 'good' | 'bad'): ResolvedFuture { return this.prompts.resolveFuture(promptIds, f, prompt, name); }

  /** The text that follows the prompt's text in decode(prompt + new) (PromptCodec.continuationText). */
  continuationText(promptIds: readonly number[], ids: readonly number[]): string { return this.prompts.continuationText(promptIds, ids); }

  /**
   * One forward pass over `ids` from position 0 (the KV cache is overwritten), capturing hooks.
   * @returns the captured values read back to the host, keyed by hook name, and the logits [T, V]
   *   (or [1, V] with `logits: 'last'`).
   * @throws Error for an unknown hook name or a sequence longer than the context.
   */
  async run(ids: readonly number[], opts: RunOptions = {}): Promise<{ logits: Float32Array; captured: Map<string, Float32Array> }> {
    const attached = new Set((opts.saes ?? []).map((a) => a.sae.cfg.hookName));
    for (const a of attached) assertHook(this.spec, a);
    for (const h of [...(opts.capture ?? []), ...(opts.interventions ?? []).map((iv) => iv.hook)]) {
      const sae = splitSaeHook(h);
      if (sae && attached.has(sae.hook)) continue;
      if (sae) throw new Error(`hook "${h}" exists only while an SAE is attached at ${sae.hook}`);
      assertHook(this.spec, h);
    }
    const want = new Set(opts.capture ?? []);
    const ctx = new RunContext(this.backend, { pos0: 0, n: ids.length, nPrompt: opts.nPrompt ?? ids.length, step: 0 }, (n) => want.has(n), opts.interventions, opts.saes);
    try {
      const logits = this.model.forward(Int32Array.from(ids), ctx, opts.logits ?? 'all')!;
      const captured = new Map<string, Float32Array>();
      for (const [name, t] of ctx.captured) captured.set(name, await this.backend.read(t));
      const out = await this.backend.read(logits);
      this.backend.release(logits);
      await this.assertFinite(out, 'the logits', ids, opts.nPrompt ?? ids.length, opts.interventions ?? []);
      return { logits: out, captured };
    } finally {
      ctx.release();
    }
  }

  /**
   * The full prompt analysis, one forward pass capturing the residual stream and the attention, then
   * one function per analysis over the captures: lensMargins (logit-lens margin grid and final-layer
   * margins, model/lens.ts), residualStats (residual norms, massive activations,
   * analysis/residual.ts), sinkStats (attention sinks, analysis/sinks.ts), teacherForcedMargin
   * (teacher-forced, multi-token futures); the residual stack is kept for lens top tokens (lensTop).
   * Definitions: DESIGN.md §3 (nostalgebraist 2020 logit lens with LN_f recomputed per vector;
   * Gu et al. 2024 sinks; Sun et al. 2024 massive activations).
   * @throws Error for a bad prompt (empty, longer than the context) or future, or a bad intervention hook.
   */
  async analyse(req: AnalyseRequest): Promise<Analysis> {
    const s = this.spec, b = this.backend, L = s.nLayers;
    const { promptIds: ids, good, bad, interventions } = this.readRequest(req);
    const T = ids.length;
    const residNames = ['blocks.0.hook_resid_pre', ...Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_post`)];
    const attnNames = (l: number) => [`blocks.${l}.attn.hook_pattern`, `blocks.${l}.attn.hook_v`];
    const capture = new Set([...residNames, ...Array.from({ length: L }, (_, l) => attnNames(l)).flat()]);
    const ctx = new RunContext(b, { pos0: 0, n: T, nPrompt: T, step: 0 }, (n) => capture.has(n), interventions);
    let stack: Tensor | null = null;
    try {
      const lastHost = await this.readAndRelease(this.model.forward(Int32Array.from(ids), ctx, 'last')!);
      await this.assertFinite(lastHost, 'the logits', ids, T, interventions);
      // Logit lens over h^0 (embeddings) .. h^L, as one stack [(L+1)·T, d_model].
      stack = b.concatRows(residNames.map((n) => ctx.captured.get(n)!));
      const lens = await lensMargins(this.model, stack, T, good.firstIds, bad.firstIds);
      await this.assertFinite(lens.lensMargin, 'the logit-lens margin', ids, T, interventions);
      const stackHost = await b.read(stack);
      const lensHandle = this.lensStacks.remember(stackHost, L + 1, T);
      const residual = residualStats(stackHost, L + 1, T, s.dModel);
      const patterns: Float32Array[] = [], values: Float32Array[] = [];
      for (let l = 0; l < L; l++) {
        const [pattern, v] = attnNames(l).map((n) => ctx.captured.get(n)!);
        patterns.push(await b.read(pattern));
        values.push(await b.read(v));
      }
      const sinks = sinkStats(patterns, values, s.nHeads, s.nKvHeads, s.dHead, T, req.sinkEps ?? 0.3);
      // The KV cache now holds the prompt: each branch continues from it.
      const sequenceMargin = await teacherForcedMargin(this.decoder, logSoftmaxCpu(lastHost, lastHost.length), ids, good, bad, interventions);
      return {
        warnings: this.prompts.futureWarnings(req, good, bad),
        ids, tokens: this.tokenStrings(ids), nLayers: L, nHeads: s.nHeads, good, bad,
        lensMargin: lens.lensMargin, finalMargin: lens.finalMargin, sequenceMargin,
        lensHandle, residNorms: residual.norms, massive: residual.massive, sinks,
      };
    } finally {
      if (stack) b.release(stack);
      ctx.release();
    }
  }

  /**
   * A request's prompt ids, its two futures resolved in context and its interventions, checked.
   * @throws Error for a bad prompt or future (PromptCodec) or an unknown intervention hook.
   */
  private readRequest(req: AnalyseRequest | GenerateRequest): ReadRequest {
    const promptIds = this.encodePrompt(req);
    const good = this.resolveFuture(promptIds, req.good, req, 'good');
    const bad = this.resolveFuture(promptIds, req.bad, req, 'bad');
    const interventions = req.interventions ?? [];
    for (const iv of interventions) assertHook(this.spec, iv.hook);
    return { promptIds, good, bad, interventions };
  }

  /** Reads a tensor back to the host and releases it. */
  private async readAndRelease(t: Tensor): Promise<Float32Array> {
    try {
      return await this.backend.read(t);
    } finally {
      this.backend.release(t);
    }
  }

  /**
   * The logit lens's k most likely next tokens at one cell of an analysis's margin grid, computed
   * on demand over the whole vocabulary: top-k of log_softmax(W_U · LN_f(h^layer_position))
   * (nostalgebraist 2020; LN_f recomputed on the vector).
   * @param handle Analysis.lensHandle (the worker keeps the latest two analyses' residual stacks).
   * @param layer 0 = embeddings … n_layers; position 0 … T−1.
   * @throws Error for a handle no longer held, a cell outside the grid, or k outside [1, d_vocab];
   *   NonFiniteError when the cell's log-probs are not finite.
   */
  async lensTop(handle: number, layer: number, position: number, k = 5): Promise<LensTop> {
    const [top] = await lensTopK(this.model, this.lensStacks.row(handle, layer, position, this.spec.dModel), Math.min(k, this.spec.dVocab));
    if (firstNonFinite(top.logProbs) >= 0) throw new NonFiniteError(`the logit lens at layer ${layer}, position ${position}`, null);
    return top;
  }

  /**
   * @throws NonFiniteError naming the hook, layer and position where the first NaN/Inf appeared
   *   (located by re-running seq with captures, model/span.ts) when `values` are not all finite.
   */
  private async assertFinite(values: ArrayLike<number>, what: string, seq: readonly number[], nPrompt: number, interventions: readonly Intervention[]): Promise<void> {
    await assertFiniteRun(values, what, this.model, seq, nPrompt, interventions, (p) => this.tokenStrings([seq[p]], seq.slice(0, p))[0]);
  }

  /**
   * Generates token by token through the KV cache, recording the margin of the two futures at
   * every step (decode.ts generateTokens; DESIGN.md §3 "Margin curve during generation").
   * @param onToken called once per new token, as soon as it is chosen.
   * @param signal aborts between tokens (stop = 'cancelled').
   * @param capture a hook to capture at every step (decode.ts StepCapture; checked against the model's hooks).
   * @throws Error for a bad prompt, future or intervention, or a hook the model does not have.
   */
  generate(req: GenerateRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal, capture?: StepCapture): Promise<Generation> {
    if (capture) assertHook(this.spec, capture.hook);
    return generateTokens(this.decoder, this.readRequest(req), req, onToken, signal, capture);
  }

  /** Frees the KV cache and every GPU buffer of this model (and the backend's device). */
  dispose(): void {
    this.disposed = true;
    this.lensStacks.clear();
    this.model.dispose();
    this.backend.dispose();
  }
}
