/**
 * Engine numerics on WebGPU: real models (/models/<name>/) and per-architecture fixtures
 * (/fixtures/<arch>-tiny/) loaded through model/load.ts onto WebGpuBackend, compared with their
 * golden references (see ../shared/models/*\/reference/README.md and ../shared/fixtures/README.md).
 * Exposes `window.runNumerics(fixtures)` for numerics.spec.ts.
 */
import type { Backend } from '../../workers/engine/backend/backend';
import { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import { SUPPORTED_MODEL_TYPES } from '../../workers/engine/arch/registry';
import { HttpFiles } from '../../workers/engine/io/model_files';
import { decodeTensor, parseSafetensors } from '../../workers/engine/io/safetensors';
import { loadTransformer } from '../../workers/engine/model/load';
import { RunContext } from '../../workers/engine/model/run_context';
import type { Transformer } from '../../workers/engine/model/transformer';
import { diff } from './compare';

/** One compared quantity: the engine's maximum absolute difference from the golden reference. */
export interface NumericsRow {
  model: string;
  what: string;
  maxAbs: number;
}

/** Greedy ids generated through the KV cache against the reference ids. */
export interface GenerationRow {
  model: string;
  what: string;
  want: number[];
  got: number[];
}

export interface NumericsReport {
  adapter: string;
  rows: NumericsRow[];
  generations: GenerationRow[];
  /** Fixtures whose model_type is not registered (with the reason), so the spec can list them. */
  skipped: string[];
}

declare global {
  interface Window { runNumerics: (fixtures: string[]) => Promise<NumericsReport> }
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

/** One no-cache forward over ids from position 0: logits [n, V] and the captured hooks. */
async function forwardCaptured(b: Backend, model: Transformer, ids: number[], hooks: string[]): Promise<{ logits: Float32Array; hooks: Map<string, Float32Array> }> {
  const want = new Set(hooks);
  const ctx = new RunContext(b, { pos0: 0, n: ids.length, nPrompt: ids.length, step: 0 }, (name) => want.has(name));
  const t = model.forward(Int32Array.from(ids), ctx, 'all')!;
  const logits = await b.read(t);
  b.release(t);
  const out = new Map<string, Float32Array>();
  for (const [name, v] of ctx.captured) out.set(name, await b.read(v));
  ctx.release();
  for (const h of hooks) if (!out.has(h)) throw new Error(`hook ${h} did not fire`);
  return { logits, hooks: out };
}

/**
 * Greedy decoding through the KV cache: the prompt in one forward (step 0), then one forward per
 * new token; the next id is the GPU top-1 of the last row. Returns the ids and each step's logits.
 */
async function greedy(b: Backend, model: Transformer, prompt: number[], nNew: number): Promise<{ ids: number[]; stepLogits: Float32Array[] }> {
  const ids: number[] = [];
  const stepLogits: Float32Array[] = [];
  let input = Int32Array.from(prompt);
  let pos0 = 0;
  for (let step = 0; step < nNew; step++) {
    const ctx = new RunContext(b, { pos0, n: input.length, nPrompt: prompt.length, step });
    const t = model.forward(input, ctx, 'last')!;
    const top = await b.topk(t, 1);
    stepLogits.push(await b.read(t));
    b.release(t);
    ids.push(top.indices[0]);
    pos0 += input.length;
    input = Int32Array.of(top.indices[0]);
  }
  return { ids, stepLogits };
}

interface ModelReference {
  n_gen: number;
  prompts: { name: string; input_ids: number[]; greedy_ids: number[]; sequence_ids: number[]; n_positions: number; file: string }[];
}

/**
 * A real model: for each reference prompt, logits, resid_post of every block and attention
 * probabilities over sequence_ids[:n_positions]; then the greedy continuation through the KV cache
 * (ids exact, and each step's logits against the no-cache reference row it predicts from).
 */
async function realModel(b: Backend, name: string, report: NumericsReport): Promise<void> {
  const base = `/models/${name}/`;
  const { model } = await loadTransformer(new HttpFiles(name, base), b);
  const L = model.spec.nLayers;
  const ref = await fetchJson<ModelReference>(`${base}reference/reference.json`);
  for (const p of ref.prompts) {
    const r = await fetchReference(`${base}reference/${p.file}`);
    const T = p.n_positions;
    const hooks = Array.from({ length: L }, (_, l) => [`blocks.${l}.hook_resid_post`, `blocks.${l}.attn.hook_pattern`]).flat();
    const run = await forwardCaptured(b, model, p.sequence_ids.slice(0, T), hooks);
    const row = (what: string, got: Float32Array, want: Float32Array): void => {
      report.rows.push({ model: name, what: `${p.name}: ${what}`, maxAbs: diff(got, want).maxAbs });
    };
    row('logits', run.logits, tensor(r, 'logits'));
    for (let l = 0; l < L; l++) {
      row(`blocks.${l}.hook_resid_post`, run.hooks.get(`blocks.${l}.hook_resid_post`)!, slab(tensor(r, 'resid_post'), L, l));
      row(`blocks.${l}.attn.hook_pattern`, run.hooks.get(`blocks.${l}.attn.hook_pattern`)!, slab(tensor(r, 'attn_probs'), L, l));
    }
    const g = await greedy(b, model, p.input_ids, ref.n_gen);
    report.generations.push({ model: name, what: `${p.name}: ${ref.n_gen} greedy tokens through the KV cache`, want: p.greedy_ids, got: g.ids });
    const logits = tensor(r, 'logits'), V = model.spec.dVocab, n0 = p.input_ids.length - 1;
    let worst = 0;
    g.stepLogits.forEach((s, k) => {
      if (n0 + k < T) worst = Math.max(worst, diff(s, logits.subarray((n0 + k) * V, (n0 + k + 1) * V)).maxAbs);
    });
    report.rows.push({ model: name, what: `${p.name}: KV-cache step logits vs reference rows`, maxAbs: worst });
  }
  model.dispose();
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
async function fixture(b: Backend, dir: string, report: NumericsReport): Promise<void> {
  const base = `/fixtures/${dir}/`;
  const config = await fetchJson<{ model_type: string }>(`${base}config.json`);
  if (!SUPPORTED_MODEL_TYPES.includes(config.model_type)) {
    report.skipped.push(`${dir}: model_type "${config.model_type}" is not registered in arch/registry.ts`);
    return;
  }
  const { model } = await loadTransformer(new HttpFiles(dir, base), b);
  const L = model.spec.nLayers;
  const meta = await fetchJson<FixtureMeta>(`${base}reference/meta.json`);
  const hooks = ['blocks.0.hook_resid_pre', 'ln_final.hook_normalized', ...Array.from({ length: L }, (_, l) => [`blocks.${l}.hook_resid_post`, `blocks.${l}.attn.hook_pattern`]).flat()];
  for (const s of meta.sequences) {
    const r = await fetchReference(`${base}reference/${s.name}.safetensors`);
    const run = await forwardCaptured(b, model, s.input_ids, hooks);
    const row = (what: string, got: Float32Array, want: Float32Array): void => {
      report.rows.push({ model: dir, what: `${s.name}: ${what}`, maxAbs: diff(got, want).maxAbs });
    };
    const hs = tensor(r, 'hidden_states');
    row('logits', run.logits, tensor(r, 'logits'));
    row('hidden_states[0] = blocks.0.hook_resid_pre', run.hooks.get('blocks.0.hook_resid_pre')!, slab(hs, L + 1, 0));
    for (let i = 1; i < L; i++) row(`hidden_states[${i}] = blocks.${i - 1}.hook_resid_post`, run.hooks.get(`blocks.${i - 1}.hook_resid_post`)!, slab(hs, L + 1, i));
    row(`hidden_states[${L}] = ln_final.hook_normalized`, run.hooks.get('ln_final.hook_normalized')!, slab(hs, L + 1, L));
    row(`resid_post_last_block = blocks.${L - 1}.hook_resid_post`, run.hooks.get(`blocks.${L - 1}.hook_resid_post`)!, tensor(r, 'resid_post_last_block'));
    for (let l = 0; l < L; l++) row(`attentions[${l}] = blocks.${l}.attn.hook_pattern`, run.hooks.get(`blocks.${l}.attn.hook_pattern`)!, slab(tensor(r, 'attentions'), L, l));
    const g = await greedy(b, model, s.input_ids, s.generated_ids.length);
    report.generations.push({ model: dir, what: `${s.name}: ${s.generated_ids.length} greedy tokens through the KV cache`, want: s.generated_ids, got: g.ids });
    const stepRef = tensor(r, 'generate_step_logits');
    let worst = 0;
    g.stepLogits.forEach((sl, k) => { worst = Math.max(worst, diff(sl, slab(stepRef, g.stepLogits.length, k)).maxAbs); });
    report.rows.push({ model: dir, what: `${s.name}: KV-cache step logits vs generate_step_logits`, maxAbs: worst });
  }
  model.dispose();
}

window.runNumerics = async (fixtures: string[]): Promise<NumericsReport> => {
  const b = await WebGpuBackend.create();
  const report: NumericsReport = { adapter: b.description, rows: [], generations: [], skipped: [] };
  try {
    for (const name of ['stories260K', 'aidreams260K']) await realModel(b, name, report);
    for (const dir of fixtures) await fixture(b, dir, report);
  } finally {
    b.dispose();
  }
  return report;
};
