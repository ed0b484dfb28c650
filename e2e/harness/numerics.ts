/**
 * Engine numerics on WebGPU: real models (/models/<name>/) and per-architecture fixtures
 * (/fixtures/<arch>-tiny/) loaded through model/load.ts onto WebGpuBackend, compared with their
 * golden references (see ../shared/models/*\/reference/README.md and ../shared/fixtures/README.md):
 * with float32 weights, with weights split across buffers (a small weight buffer limit), with f16
 * weights (DESIGN.md §5: report the error, keep it ≤ 5e-2), and across a device loss and reload.
 * runNumerics runs with either kernel tuning (KernelTuning), so both are checked on whole models on
 * every adapter; the other runs use the adapter's own.
 * Exposes `window.runNumerics(fixtures, tuning)`, `runSplitNumerics()`, `runF16Numerics(fixtures)` and
 * `runDeviceLoss()` for numerics.spec.ts.
 */
import type { Backend } from '../../workers/engine/backend/backend';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import { ChunkedTensor, type KernelTuning } from '../../workers/engine/backend/webgpu_host';
import { SUPPORTED_MODEL_TYPES } from '../../workers/engine/arch/registry';
import { Engine } from '../../workers/engine/engine';
import { HttpFiles } from '../../workers/engine/io/model_files';
import { decodeTensor, parseSafetensors } from '../../workers/engine/io/safetensors';
import { loadTransformer, type WeightOptions } from '../../workers/engine/model/load';
import { RunContext } from '../../workers/engine/model/run_context';
import type { Transformer } from '../../workers/engine/model/transformer';
import { diff } from './compare';
import { runCaptured } from '../../tests/model_run';

/** Bound on logits and hidden states with float32 weights (and between backends on the same weights). */
export const F32_TOL = 1e-4;
/** Bound on logits with f16 weights against the float32 reference (DESIGN.md §5). */
export const F16_TOL = 5e-2;

/** One compared quantity: the engine's maximum absolute difference from the golden reference. */
export interface NumericsRow {
  model: string;
  what: string;
  maxAbs: number;
  /** The bound the spec asserts. */
  tol: number;
}

/** Greedy ids generated through the KV cache against the reference ids. */
export interface GenerationRow {
  model: string;
  what: string;
  want: number[];
  got: number[];
  /** True: must equal `want`. False (f16 weights): reported only, as near-ties may flip. */
  exact: boolean;
}

export interface NumericsReport {
  adapter: string;
  /** The kernel variants the WebGPU backend ran. */
  tuning: KernelTuning;
  rows: NumericsRow[];
  generations: GenerationRow[];
  /** Fixtures whose model_type is not registered (with the reason), so the spec can list them. */
  skipped: string[];
  /** Dispatches of one decode step per model (runNumerics only). */
  decode?: DecodeDispatches[];
}

/** Dispatches of one decode step (n = 1 after the prompt), counted between each block's hook_resid_pre and hook_resid_post. */
export interface DecodeDispatches {
  model: string;
  modelType: string;
  /** Whole step, fused kernels. */
  step: number;
  /** Per layer, fused kernels. */
  perLayer: number[];
  /** Per layer with hook_q/k/v of layer `hookLayer` captured (that layer's QKV fusion split). */
  perLayerHooked: number[];
  hookLayer: number;
  /** Whole step and per layer with every fusion split (all FUSION_SPLITTING_HOOKS captured). */
  stepUnfused: number;
  perLayerUnfused: number[];
  /** Dispatches of the fused QKV + RoPE + KV-write kernel in the fused step. */
  qkvKernels: number;
}

/** How the weights of a run are stored, and what is compared. */
export interface Variant {
  /** Prefix of every row's `what` ('' for plain float32). */
  tag: string;
  weights: WeightOptions;
  /** Also compare residuals and attention (float32 runs); else logits only. */
  hooks: boolean;
  tol: number;
  exactIds: boolean;
  /** Also decode with every fusion split and compare (default true). */
  fusedCheck?: boolean;
}

const F32: Variant = { tag: '', weights: {}, hooks: true, tol: F32_TOL, exactIds: true };
const F16: Variant = { tag: 'f16 weights: ', weights: { weightDtype: 'f16' }, hooks: false, tol: F16_TOL, exactIds: false };

/** One claim about device loss and reload, and whether it held. */
export interface LossCheck {
  name: string;
  pass: boolean;
  detail: string;
}

declare global {
  interface Window {
    runNumerics: (fixtures: string[], tuning?: KernelTuning) => Promise<NumericsReport>;
    runSplitNumerics: () => Promise<NumericsReport & { split: string[] }>;
    runF16Numerics: (fixtures: string[]) => Promise<NumericsReport>;
    runDeviceLoss: () => Promise<LossCheck[]>;
  }
}

type Ref = Map<string, { data: Float32Array; shape: number[] }>;

async function fetchJson<T>(url: string): Promise<T> {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return (await r.json()) as T;
}

/** Every tensor of a reference .safetensors file, parsed with the engine's own reader. */
async function fetchReference(url: string): Promise<Ref> {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  const bytes = new Uint8Array(await r.arrayBuffer());
  const h = parseSafetensors(bytes, url);
  const out: Ref = new Map();
  for (const [name, e] of h.tensors) out.set(name, { data: decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype), shape: e.shape });
  return out;
}

function tensor(ref: Ref, name: string): Float32Array {
  const t = ref.get(name);
  if (!t) throw new Error(`reference has no tensor "${name}"`);
  return t.data;
}

/** Slice i of a tensor whose first axis has `count` entries. */
const slab = (a: Float32Array, count: number, i: number): Float32Array => {
  const w = a.length / count;
  return a.subarray(i * w, (i + 1) * w);
};


/** Hooks a fused decode kernel skips over (model/transformer.ts): capturing them forces the unfused ops. */
const FUSION_SPLITTING_HOOKS = /\.(ln1\.hook_normalized|attn\.hook_[qkv]|ln2\.hook_normalized|hook_attn_out|mlp\.hook_pre|hook_mlp_out)$/;

/**
 * Greedy decoding through the KV cache: the prompt in one forward (step 0), then one forward per
 * new token; the next id is the GPU top-1 of the last row. Returns the ids and each step's logits.
 * @param unfused capture every hook the fused decode kernels skip over, so each op runs on its own.
 */
async function greedy(b: Backend, model: Transformer, prompt: number[], nNew: number, unfused = false): Promise<{ ids: number[]; stepLogits: Float32Array[] }> {
  const ids: number[] = [];
  const stepLogits: Float32Array[] = [];
  let input = Int32Array.from(prompt);
  let pos0 = 0;
  for (let step = 0; step < nNew; step++) {
    const ctx = new RunContext(b, { pos0, n: input.length, nPrompt: prompt.length, step }, unfused ? (name) => FUSION_SPLITTING_HOOKS.test(name) : undefined);
    const t = model.forward(input, ctx, 'last')!;
    const top = await b.topk(t, 1);
    stepLogits.push(await b.read(t));
    b.release(t);
    ctx.release();
    ids.push(top.indices[0]);
    pos0 += input.length;
    input = Int32Array.of(top.indices[0]);
  }
  return { ids, stepLogits };
}

/**
 * Bound on max |fused − unfused| decode logits over max |unfused logits|: the two differ only in
 * float32 rounding order (the RMS scale applied after the dot product instead of before each
 * product, the residual added in the epilogue), a few ulps (2⁻²⁴ ≈ 6e-8) of the logits' scale per
 * op, compounded over the layers and through the attention softmax (measured: ≤ 2e-6 on
 * stories260K, whose logits reach ~15).
 */
const FUSED_TOL = 1e-5;

/** Greedy decoding again with every fusion split (hooks captured): its step logits against the fused run's. */
async function fusedAgrees(b: Backend, model: Transformer, prompt: number[], nNew: number, fused: Float32Array[], what: string, name: string, report: NumericsReport): Promise<void> {
  if (!b.fused) return;
  const u = await greedy(b, model, prompt, nNew, true);
  const scale = (x: Float32Array): number => x.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const worst = Math.max(...fused.map((s, k) => diff(s, u.stepLogits[k]).maxAbs / scale(u.stepLogits[k])));
  report.rows.push({ model: name, what: `${what}: fused decode kernels vs unfused ops, step logits (relative to max |logit|)`, maxAbs: worst, tol: FUSED_TOL });
}

/** A RunContext that notes the backend's dispatch count when each block starts and ends. */
class CountingContext extends RunContext {
  readonly marks = new Map<string, number>();
  constructor(b: Backend, site: ConstructorParameters<typeof RunContext>[1], capture: ((name: string) => boolean) | undefined, readonly count: () => number) {
    super(b, site, capture);
  }
  fire(name: string, t: Parameters<RunContext['fire']>[1]) {
    if (/hook_resid_(pre|post)$/.test(name)) this.marks.set(name, this.count());
    return super.fire(name, t);
  }
  perLayer(L: number): number[] {
    return Array.from({ length: L }, (_, l) => this.marks.get(`blocks.${l}.hook_resid_post`)! - this.marks.get(`blocks.${l}.hook_resid_pre`)!);
  }
}

/**
 * One decode step after `prompt`, three times at the same position: fused; with hook_q/k/v of the
 * middle layer captured; with every fusion split. Counts the dispatches of each (per layer), and
 * checks that the captured hook_k and hook_v equal the rows the fused kernel wrote into the KV cache
 * (a hook inside the fused region splits the fusion and yields the same value), and that the
 * hooked step's logits equal the fused step's.
 */
async function decodeProbe(b: WebGpuBackend, model: Transformer, prompt: number[], name: string, report: NumericsReport): Promise<void> {
  if (!b.fused) return;
  const L = model.spec.nLayers, T = prompt.length, hl = Math.floor(L / 2), kvW = model.spec.nKvHeads * model.spec.dHead;
  const pre = new RunContext(b, { pos0: 0, n: T, nPrompt: T, step: 0 });
  model.forward(Int32Array.from(prompt), pre, 'none');
  pre.release();
  const labels: string[] = [];
  const dispatch = b.dispatch;
  b.dispatch = (...a) => { labels.push(a[0].label); dispatch.apply(b, a); };
  const step = async (capture?: (name: string) => boolean) => {
    labels.length = 0;
    const ctx = new CountingContext(b, { pos0: T, n: 1, nPrompt: T, step: 1 }, capture, () => labels.length);
    const t = model.forward(Int32Array.of(prompt[T - 1]), ctx, 'last')!;
    const out = { logits: await b.read(t), count: labels.length, perLayer: ctx.perLayer(L), qkv: labels.filter((k) => k.startsWith('qkv_rope')).length, captured: new Map<string, Float32Array>() };
    b.release(t);
    for (const [k, v] of ctx.captured) out.captured.set(k, await b.read(v));
    ctx.release();
    return out;
  };
  try {
    const fused = await step();
    const snap = model.snapshotKv(T + 1);
    const [kRow, vRow] = [snap.k[hl], snap.v[hl]].map(async (t) => (await b.read(t)).subarray(T * kvW));
    const cache = { k: await kRow, v: await vRow };
    model.releaseKv(snap);
    const hooked = await step((n) => new RegExp(`^blocks\\.${hl}\\.attn\\.hook_[qkv]$`).test(n));
    const unfused = await step((n) => FUSION_SPLITTING_HOOKS.test(n));
    for (const t of ['k', 'v'] as const) {
      report.rows.push({ model: name, what: `decode: blocks.${hl}.attn.hook_${t} captured (fusion split) vs the KV-cache row the fused step wrote`, maxAbs: diff(hooked.captured.get(`blocks.${hl}.attn.hook_${t}`)!, cache[t]).maxAbs, tol: HOOK_TOL });
    }
    report.rows.push({ model: name, what: `decode: logits with blocks.${hl}.attn.hook_q/k/v captured vs fused (relative to max |logit|)`, maxAbs: diff(hooked.logits, fused.logits).maxAbs / fused.logits.reduce((m, v) => Math.max(m, Math.abs(v)), 0), tol: FUSED_TOL });
    (report.decode ??= []).push({
      model: name, modelType: model.spec.modelType, step: fused.count, perLayer: fused.perLayer, perLayerHooked: hooked.perLayer, hookLayer: hl,
      stepUnfused: unfused.count, perLayerUnfused: unfused.perLayer, qkvKernels: fused.qkv,
    });
  } finally {
    b.dispatch = dispatch;
  }
}

/**
 * Bound on a hook captured inside the fused region against the value the fused kernel computed: the
 * split ops sum in the same order, so they agree to the last bits (a compiler may contract a·b + c
 * into an FMA in one shader and not the other).
 */
const HOOK_TOL = 1e-6;

interface ModelReference {
  n_gen: number;
  prompts: { name: string; input_ids: number[]; greedy_ids: number[]; sequence_ids: number[]; n_positions: number; file: string }[];
}

/**
 * A real model: for each reference prompt, logits (and with v.hooks resid_post of every block and
 * attention probabilities) over sequence_ids[:n_positions]; then the greedy continuation through
 * the KV cache (ids, and each step's logits against the no-cache reference row it predicts from).
 * @returns the loaded model (the caller disposes it).
 */
export async function realModel(b: Backend, name: string, report: NumericsReport, v: Variant = F32): Promise<Transformer> {
  const base = `/models/${name}/`;
  const { model } = await loadTransformer(new HttpFiles(name, base), b, undefined, v.weights);
  const L = model.spec.nLayers;
  const ref = await fetchJson<ModelReference>(`${base}reference/reference.json`);
  for (const p of ref.prompts) {
    const r = await fetchReference(`${base}reference/${p.file}`);
    const T = p.n_positions;
    const hooks = v.hooks ? Array.from({ length: L }, (_, l) => [`blocks.${l}.hook_resid_post`, `blocks.${l}.attn.hook_pattern`]).flat() : [];
    const run = await runCaptured(b, model, p.sequence_ids.slice(0, T), hooks);
    const row = (what: string, got: Float32Array, want: Float32Array): void => {
      report.rows.push({ model: name, what: `${v.tag}${p.name}: ${what}`, maxAbs: diff(got, want).maxAbs, tol: v.tol });
    };
    row('logits', run.logits, tensor(r, 'logits'));
    for (const h of hooks) {
      const l = Number(h.split('.')[1]);
      row(h, run.captured.get(h)!, slab(tensor(r, h.endsWith('hook_pattern') ? 'attn_probs' : 'resid_post'), L, l));
    }
    const g = await greedy(b, model, p.input_ids, ref.n_gen);
    report.generations.push({ model: name, what: `${v.tag}${p.name}: ${ref.n_gen} greedy tokens through the KV cache`, want: p.greedy_ids, got: g.ids, exact: v.exactIds });
    const logits = tensor(r, 'logits'), V = model.spec.dVocab, n0 = p.input_ids.length - 1;
    let worst = 0;
    g.stepLogits.forEach((s, k) => {
      if (n0 + k < T) worst = Math.max(worst, diff(s, logits.subarray((n0 + k) * V, (n0 + k + 1) * V)).maxAbs);
    });
    report.rows.push({ model: name, what: `${v.tag}${p.name}: KV-cache step logits vs reference rows`, maxAbs: worst, tol: v.tol });
    if (v.fusedCheck !== false) await fusedAgrees(b, model, p.input_ids, ref.n_gen, g.stepLogits, `${v.tag}${p.name}`, name, report);
  }
  if (report.decode && b instanceof WebGpuBackend) await decodeProbe(b, model, ref.prompts[0].input_ids, name, report);
  return model;
}

interface FixtureMeta {
  sequences: { name: string; input_ids: number[]; generated_ids: number[] }[];
}

/**
 * A tiny fixture: logits, hidden_states (hidden_states[0] = blocks.0.hook_resid_pre,
 * hidden_states[i] = blocks.{i−1}.hook_resid_post for 1 ≤ i < L, hidden_states[L] =
 * ln_final.hook_normalized), resid_post_last_block and attentions of seq0..2; then greedy
 * generated_ids through the KV cache and each step's logits against generate_step_logits.
 */
export async function fixture(b: Backend, dir: string, report: NumericsReport, v: Variant = F32): Promise<void> {
  const base = `/fixtures/${dir}/`;
  const config = await fetchJson<{ model_type: string }>(`${base}config.json`);
  if (!SUPPORTED_MODEL_TYPES.includes(config.model_type)) {
    report.skipped.push(`${dir}: model_type "${config.model_type}" is not registered in arch/registry.ts`);
    return;
  }
  const { model } = await loadTransformer(new HttpFiles(dir, base), b, undefined, v.weights);
  const L = model.spec.nLayers;
  const meta = await fetchJson<FixtureMeta>(`${base}reference/meta.json`);
  const hooks = v.hooks ? ['blocks.0.hook_resid_pre', 'ln_final.hook_normalized', ...Array.from({ length: L }, (_, l) => [`blocks.${l}.hook_resid_post`, `blocks.${l}.attn.hook_pattern`]).flat()] : [];
  for (const s of meta.sequences) {
    const r = await fetchReference(`${base}reference/${s.name}.safetensors`);
    const run = await runCaptured(b, model, s.input_ids, hooks);
    const row = (what: string, got: Float32Array, want: Float32Array): void => {
      report.rows.push({ model: dir, what: `${v.tag}${s.name}: ${what}`, maxAbs: diff(got, want).maxAbs, tol: v.tol });
    };
    row('logits', run.logits, tensor(r, 'logits'));
    if (v.hooks) {
      const hs = tensor(r, 'hidden_states');
      row('hidden_states[0] = blocks.0.hook_resid_pre', run.captured.get('blocks.0.hook_resid_pre')!, slab(hs, L + 1, 0));
      for (let i = 1; i < L; i++) row(`hidden_states[${i}] = blocks.${i - 1}.hook_resid_post`, run.captured.get(`blocks.${i - 1}.hook_resid_post`)!, slab(hs, L + 1, i));
      row(`hidden_states[${L}] = ln_final.hook_normalized`, run.captured.get('ln_final.hook_normalized')!, slab(hs, L + 1, L));
      row(`resid_post_last_block = blocks.${L - 1}.hook_resid_post`, run.captured.get(`blocks.${L - 1}.hook_resid_post`)!, tensor(r, 'resid_post_last_block'));
      for (let l = 0; l < L; l++) row(`attentions[${l}] = blocks.${l}.attn.hook_pattern`, run.captured.get(`blocks.${l}.attn.hook_pattern`)!, slab(tensor(r, 'attentions'), L, l));
    }
    const g = await greedy(b, model, s.input_ids, s.generated_ids.length);
    report.generations.push({ model: dir, what: `${v.tag}${s.name}: ${s.generated_ids.length} greedy tokens through the KV cache`, want: s.generated_ids, got: g.ids, exact: v.exactIds });
    const stepRef = tensor(r, 'generate_step_logits');
    let worst = 0;
    g.stepLogits.forEach((sl, k) => { worst = Math.max(worst, diff(sl, slab(stepRef, g.stepLogits.length, k)).maxAbs); });
    report.rows.push({ model: dir, what: `${v.tag}${s.name}: KV-cache step logits vs generate_step_logits`, maxAbs: worst, tol: v.tol });
    if (v.fusedCheck !== false) await fusedAgrees(b, model, s.input_ids, s.generated_ids.length, g.stepLogits, `${v.tag}${s.name}`, dir, report);
  }
  if (report.decode && b instanceof WebGpuBackend) await decodeProbe(b, model, meta.sequences[0].input_ids, dir, report);
  model.dispose();
}

/**
 * f16 parity: the same model with f16 weights on WebGPU (halves unpacked in the kernels) and on the
 * CPU backend (float32 weights rounded to binary16) gives the same logits within F32_TOL, so the f16
 * error against the reference is the rounding of the weights, not a kernel's.
 */
async function f16Parity(gpu: Backend, base: string, label: string, ids: number[], report: NumericsReport): Promise<void> {
  const logits: Float32Array[] = [];
  for (const b of [gpu, new CpuBackend()]) {
    const { model } = await loadTransformer(new HttpFiles(label, base), b, undefined, { weightDtype: 'f16' });
    logits.push((await runCaptured(b, model, ids, [])).logits);
    model.dispose();
  }
  report.rows.push({ model: label, what: `f16 weights: logits on WebGPU vs the CPU backend with the same rounded weights (${ids.length} tokens)`, maxAbs: diff(logits[0], logits[1]).maxAbs, tol: F32_TOL });
}

/** @param tuning the kernel variants to run (default: the adapter's own). */
window.runNumerics = async (fixtures: string[], tuning?: KernelTuning): Promise<NumericsReport> => {
  const b = await WebGpuBackend.create({ tuning });
  const report: NumericsReport = { adapter: b.description, tuning: b.tuning, rows: [], generations: [], skipped: [], decode: [] };
  try {
    for (const name of ['stories260K', 'aidreams260K']) (await realModel(b, name, report)).dispose();
    for (const dir of fixtures) await fixture(b, dir, report);
  } finally {
    b.dispose();
  }
  return report;
};

/**
 * Bytes one weight part may occupy in runSplitNumerics: stories260K's W_E = W_U [512, 64] f32
 * (128 KiB) splits into 4 parts of ≤ 160 rows (the last 32), gate/up [172, 64] and down [64, 172]
 * into 2; as f16 (64 KiB) W_E splits into 2.
 */
const SPLIT_BYTES = 40 * 1024;

/**
 * stories260K on a backend whose weight buffer limit splits its embedding/unembedding (and MLP)
 * matrices: every float32 comparison of runNumerics at F32_TOL, and with f16 weights at F16_TOL.
 * `split` lists how each weight was split, for the spec to check that W_E really was.
 */
window.runSplitNumerics = async (): Promise<NumericsReport & { split: string[] }> => {
  const b = await WebGpuBackend.create({ maxWeightBufferBytes: SPLIT_BYTES });
  const report: NumericsReport & { split: string[] } = { adapter: b.description, tuning: b.tuning, rows: [], generations: [], skipped: [], split: [] };
  const parts = (t: unknown): string => (t instanceof ChunkedTensor ? t.parts.map((p) => p.shape[0]).join('+') : 'whole');
  try {
    const m = await realModel(b, 'stories260K', report);
    const w = m.weights, blk = w.blocks[0];
    report.split.push(`W_E rows ${parts(w.embed)}`, `W_U rows ${parts(w.unembed)}`, `gate rows ${parts(blk.gate!.w)}`, `down rows ${parts(blk.down!.w)}`, `q rows ${parts(blk.q.w)}`);
    m.dispose();
    const h = await realModel(b, 'stories260K', report, { ...F16, tag: 'f16 weights, split: ' });
    report.split.push(`f16 W_E rows ${parts(h.weights.embed)}`);
    h.dispose();
  } finally {
    b.dispose();
  }
  return report;
};

/**
 * f16 weights (matrices as binary16, norms float32) on the real models and the fixtures: logits
 * and KV-cache step logits against the float32 references at F16_TOL, greedy ids reported; and
 * WebGPU-vs-CPU parity on the same rounded weights at F32_TOL.
 */
window.runF16Numerics = async (fixtures: string[]): Promise<NumericsReport> => {
  const b = await WebGpuBackend.create();
  const report: NumericsReport = { adapter: b.description, tuning: b.tuning, rows: [], generations: [], skipped: [] };
  try {
    for (const name of ['stories260K', 'aidreams260K']) {
      (await realModel(b, name, report, F16)).dispose();
      const ref = await fetchJson<ModelReference>(`/models/${name}/reference/reference.json`);
      await f16Parity(b, `/models/${name}/`, name, ref.prompts[0].sequence_ids.slice(0, ref.prompts[0].n_positions), report);
    }
    for (const dir of fixtures) {
      await fixture(b, dir, report, F16);
      if (report.skipped.some((s) => s.startsWith(`${dir}:`))) continue;
      const meta = await fetchJson<FixtureMeta>(`/fixtures/${dir}/reference/meta.json`);
      await f16Parity(b, `/fixtures/${dir}/`, dir, meta.sequences[0].input_ids, report);
    }
  } finally {
    b.dispose();
  }
  return report;
};

/**
 * Device loss and reload at the engine level (what the inference worker relies on): an Engine on
 * WebGPU learns of the loss (deviceLost, onDeviceLost), its runs then fail with "GPU device lost",
 * dispose() does not count as a loss, and Engine.load on a new backend gives the golden logits again.
 */
window.runDeviceLoss = async (): Promise<LossCheck[]> => {
  const checks: LossCheck[] = [];
  const check = async (name: string, f: () => Promise<string | true>): Promise<void> => {
    try {
      const r = await f();
      checks.push({ name, pass: r === true, detail: r === true ? '' : r });
    } catch (e) {
      checks.push({ name, pass: false, detail: `threw: ${(e as Error).message}` });
    }
  };
  const base = '/models/stories260K/';
  const ref = await fetchJson<ModelReference>(`${base}reference/reference.json`);
  const p = ref.prompts[0];
  const want = tensor(await fetchReference(`${base}reference/${p.file}`), 'logits');
  const ids = p.sequence_ids.slice(0, p.n_positions);
  const golden = async (e: Engine): Promise<string | true> => {
    const d = diff((await e.run(ids)).logits, want).maxAbs;
    return d <= F32_TOL ? true : `logits differ from the reference by ${d}`;
  };
  const within = <T>(ms: number, p: Promise<T>): Promise<T | 'timeout'> => Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms))]);

  const first = await Engine.load(new HttpFiles('stories260K', base), await WebGpuBackend.create());
  await check('before the loss: deviceLost is null and the logits match the reference', async () => (first.deviceLost === null ? golden(first) : `deviceLost = ${first.deviceLost}`));
  const reported = new Promise<string>((r) => first.onDeviceLost(r));
  (first.backend as WebGpuBackend).device.destroy();
  await check('device.destroy() is reported through onDeviceLost and deviceLost, with the reason', async () => {
    const reason = await within(5000, reported);
    if (reason === 'timeout') return 'onDeviceLost was not called within 5 s';
    return /destroyed/.test(reason) && first.deviceLost === reason ? true : `callback "${reason}", deviceLost "${first.deviceLost}"`;
  });
  await check('after the loss, a run fails with "GPU device lost … reload the model"', async () => {
    const r = await first.run(ids).then(() => 'the run succeeded', (e: Error) => e.message);
    return /^GPU device lost \(destroyed/.test(r) && /reload the model/.test(r) ? true : r;
  });
  first.dispose();

  const second = await Engine.load(new HttpFiles('stories260K', base), await WebGpuBackend.create());
  await check('Engine.load on a new backend after the loss works: deviceLost null, logits match the reference', async () => (second.deviceLost === null ? golden(second) : `deviceLost = ${second.deviceLost}`));
  await check('dispose() destroys the device without reporting a loss', async () => {
    let called: string | null = null;
    second.onDeviceLost((r) => { called = r; });
    const lost = (second.backend as WebGpuBackend).lost;
    second.dispose();
    await within(5000, lost);
    await new Promise((r) => setTimeout(r, 0));
    return called === null && second.deviceLost === null ? true : `reported "${called}", deviceLost "${second.deviceLost}"`;
  });
  return checks;
};
