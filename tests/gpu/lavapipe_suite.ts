import * as fs from 'node:fs';
import type { WebGpuOptions } from '../../workers/engine/backend/webgpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer, type WeightDtype } from '../../workers/engine/model/load';
import type { Transformer } from '../../workers/engine/model/transformer';
import type { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import { readReference, sharedPath } from '../shared';
import { missingFeatures, nodeBackend, type NeededFeature } from './node_webgpu';

/**
 * What the tests in tests/gpu/ share: the golden models they run (fixtures and stories260K, with
 * their reference logits and greedy continuations) and the rule for a missing feature.
 */

/**
 * Why these tests cannot run here, or null. In CI (CI set) a missing adapter or feature throws: CI
 * installs Mesa 25 lavapipe (.ci/run), so a skip there would hide a broken install.
 */
export async function unavailable(features: readonly NeededFeature[]): Promise<string | null> {
  const why = await missingFeatures(features);
  if (why && process.env.CI) throw new Error(`${why} — CI installs Mesa 25 lavapipe in .ci/run, so tests/gpu/ must run there`);
  return why;
}

/** One golden sequence: prompt ids, reference logits [T, V] over `ids`, and the greedy continuation with the logits row that chose each token. */
export interface GoldenSequence {
  name: string;
  /** Ids run through the model for `logits`. */
  ids: number[];
  logits: Float32Array;
  prompt: number[];
  greedy: number[];
  /** Reference logits [greedy.length, V] from which each greedy token was the argmax. */
  stepLogits: Float32Array;
}

/** A golden model: its folder, max |logit| over its references, its 2-D tensor count, and its sequences. */
export interface GoldenModel {
  name: string;
  dir: string;
  vocab: number;
  sequences: GoldenSequence[];
  /** 2-D tensors of the checkpoint (the matrices a binary16 load rounds). */
  matrices: number;
}

function matrixCount(dir: string): number {
  const bytes = fs.readFileSync(`${dir}/model.safetensors`);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { shape?: number[] }>;
  return Object.entries(header).filter(([k, v]) => k !== '__metadata__' && v.shape?.length === 2).length;
}

/** A tiny fixture (../shared/fixtures/README.md): every sequence's logits and its greedy generation (generate_step_logits). */
export function fixture(arch: string): GoldenModel {
  const dir = sharedPath('fixtures', `${arch}-tiny`);
  const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { name: string; input_ids: number[]; generated_ids: number[] }[] };
  const config = JSON.parse(fs.readFileSync(`${dir}/config.json`, 'utf8')) as { vocab_size: number };
  const sequences = meta.sequences.map((s) => {
    const ref = readReference(`${dir}/reference/${s.name}.safetensors`);
    return { name: s.name, ids: s.input_ids, logits: ref.get('logits')!.data, prompt: s.input_ids, greedy: s.generated_ids, stepLogits: ref.get('generate_step_logits')!.data };
  });
  return { name: `${arch}-tiny`, dir, vocab: config.vocab_size, sequences, matrices: matrixCount(dir) };
}

/** stories260K (../shared/models/stories260K/reference/README.md): logits over sequence_ids[:T]; greedy token k is the argmax of row n_prompt − 1 + k. */
export function stories260K(): GoldenModel {
  const dir = sharedPath('models', 'stories260K');
  const ref = JSON.parse(fs.readFileSync(`${dir}/reference/reference.json`, 'utf8')) as { prompts: { name: string; input_ids: number[]; greedy_ids: number[]; sequence_ids: number[]; n_positions: number; n_prompt: number }[] };
  const V = (JSON.parse(fs.readFileSync(`${dir}/config.json`, 'utf8')) as { vocab_size: number }).vocab_size;
  const sequences = ref.prompts.map((p) => {
    const logits = readReference(`${dir}/reference/${p.name}.safetensors`).get('logits')!.data;
    const stepLogits = logits.slice((p.n_prompt - 1) * V, (p.n_prompt - 1 + p.greedy_ids.length) * V);
    return { name: p.name, ids: p.sequence_ids.slice(0, p.n_positions), logits, prompt: p.input_ids, greedy: p.greedy_ids, stepLogits };
  });
  return { name: 'stories260K', dir, vocab: V, sequences, matrices: matrixCount(dir) };
}

/** A Node WebGPU backend and the model loaded on it. */
export async function loadOn(m: GoldenModel, options: WebGpuOptions, weightDtype: WeightDtype = 'f32'): Promise<{ b: WebGpuBackend; model: Transformer }> {
  const b = await nodeBackend(options);
  const { model } = await loadTransformer(new NodeFiles(m.dir), b, undefined, { weightDtype });
  return { b, model };
}

/** max |x| of an array. */
export function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
}

/** Top-1 minus top-2 of a row. */
export function margin(row: ArrayLike<number>): number {
  let a = -Infinity, b = -Infinity;
  for (let i = 0; i < row.length; i++) {
    const v = row[i];
    if (v > a) { b = a; a = v; } else if (v > b) b = v;
  }
  return a - b;
}

/**
 * How many greedy steps must reproduce the reference: steps are taken in order while the reference
 * row's top-1/top-2 margin exceeds 2·err (a logit error below err cannot swap two tokens that far
 * apart); the first closer step ends the comparison, since a legitimately different token there
 * changes every later input.
 */
export function decidableSteps(stepLogits: Float32Array, vocab: number, err: number): number {
  const n = stepLogits.length / vocab;
  for (let k = 0; k < n; k++) if (margin(stepLogits.subarray(k * vocab, (k + 1) * vocab)) <= 2 * err) return k;
  return n;
}
