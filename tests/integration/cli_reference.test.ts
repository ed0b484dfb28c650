import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli_run';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTokenizer } from '../../workers/engine/tokenizer';
import { readReference, sharedPath } from '../shared';
import { F32_TOL, l2, logSoftmax, lse, maxDiff, realModel } from '../reference_math';

/**
 * Every numeric key the `branchpoint` runner prints, against closed forms computed here from the
 * golden arrays (DESIGN.md §3 definitions; tolerance F32_TOL = 1e-4, the references' float32 bound).
 * margins: lens_margin (every row, interior layers included), final_margin, sequence_margin,
 * resid_norms; sinks: alpha0, sink_rate, sink_position, sink_value_norm (GQA map h // 2);
 * generate: ids, text, margins; sweep: margin, kl, unsteered_margin; vector: the written values and norm.
 */
const m = realModel('stories260K');
const [A, B, C] = m.ref.prompts;
const cli = async (...args: string[]) => {
  const r = await runCli(args);
  if (r.code !== 0) throw new Error(`branchpoint ${args[0]} exited ${r.code}: ${r.err}`);
  return JSON.parse(r.out);
};
/** The first id each text gets after the prompt in encode(prompt + text) (how the runner reads a future). */
async function inContextIds(dir: string, prompt: string, texts: string[]): Promise<number[]> {
  const tok = await loadTokenizer(new NodeFiles(dir));
  const n = tok.encode(prompt).length;
  return texts.map((t) => tok.encode(prompt + t)[n]);
}
let tmp: string;
beforeAll(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-cli-ref-')); });
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('branchpoint runner output against the stories260K references', () => {
  it('margins: every key, with a 4-token branch and a token set', async () => {
    const arr = m.arrays(A);
    const T = A.n_prompt;
    // ", there was a" is the reference's greedy continuation (ids 432 383 286 261); " in| on" two single tokens.
    const out = await cli('margins', '--model', m.dir, '--prompt', A.prompt, '--good', ', there was a', '--bad', ' in| on');
    expect(out.ids).toEqual(A.input_ids);
    expect(out.tokens).toHaveLength(T);
    expect(out.good.sequences).toEqual([A.greedy_ids.slice(0, 4)]);
    const badIds: number[] = out.bad.sequences.map((s: number[]) => s[0]);
    expect(out.bad.sequences.every((s: number[]) => s.length === 1)).toBe(true);
    const lens = Array.from({ length: m.L + 1 }, (_, l) => Array.from({ length: T }, (_, t) => {
      const lp = m.lens(m.resid(arr, A, l, t));
      return lp[A.greedy_ids[0]] - lse(badIds.map((i) => lp[i]));
    }));
    expect(out.lens_margin).toHaveLength(m.L + 1);
    lens.forEach((row, l) => expect(maxDiff(out.lens_margin[l], row)).toBeLessThanOrEqual(F32_TOL));
    expect(maxDiff(out.final_margin, lens[m.L])).toBeLessThanOrEqual(F32_TOL);
    const logits = arr.get('logits')!.data;
    const lpAt = (j: number) => logSoftmax(logits.subarray((T - 1 + j) * m.V, (T + j) * m.V));
    const seqLp = A.greedy_ids.slice(0, 4).reduce((s, id, j) => s + lpAt(j)[id], 0);
    expect(Math.abs(out.sequence_margin - (seqLp - lse(badIds.map((i) => lpAt(0)[i]))))).toBeLessThanOrEqual(F32_TOL);
    const norms = Array.from({ length: m.L + 1 }, (_, l) => Array.from({ length: T }, (_, t) => l2(m.resid(arr, A, l, t))));
    norms.forEach((row, l) => expect(maxDiff(out.resid_norms[l], row)).toBeLessThanOrEqual(F32_TOL));
  });

  it('sinks: alpha0, sink_rate, sink_position and sink_value_norm of every layer and head', async () => {
    const arr = m.arrays(B);
    const T = B.n_prompt;
    const out = await cli('sinks', '--model', m.dir, '--prompt', B.prompt);
    expect(out.ids).toEqual(B.input_ids);
    expect(out.eps).toBe(0.3);
    for (let l = 0; l < m.L; l++) {
      let sinks = 0;
      for (let h = 0; h < m.H; h++) {
        const mass = Array.from({ length: T }, (_, k) => { let s = 0; for (let i = k; i < T; i++) s += m.attn(arr, B, l, h, i, k); return s; });
        expect(Math.abs(out.alpha0[l][h] - mass[0] / T)).toBeLessThanOrEqual(F32_TOL);
        if (mass[0] / T > 0.3) sinks++;
        const pos = mass.indexOf(Math.max(...mass));
        expect(out.sink_position[l][h]).toBe(pos);
        const kv = Math.floor(h / (m.H / m.KV));
        const v = m.value(arr, B, l, pos).subarray(kv * m.dHead, (kv + 1) * m.dHead);
        expect(Math.abs(out.sink_value_norm[l][h] - l2(v))).toBeLessThanOrEqual(F32_TOL);
      }
      expect(out.sink_rate[l]).toBeCloseTo(sinks / m.H, 6);
    }
  });

  it('generate: ids, text and the margin at every step from the reference logits', async () => {
    const arr = m.arrays(C);
    const T = C.n_prompt;
    const out = await cli('generate', '--model', m.dir, '--prompt', C.prompt, '--good', ' happy', '--bad', ' sad', '--max-new-tokens', '8');
    expect(out.prompt_ids).toEqual(C.input_ids);
    expect(out.ids).toEqual(C.greedy_ids.slice(0, 8));
    expect(out.stop).toBe('length');
    const full = (C as unknown as { continuation_text: string }).continuation_text;
    expect(full.startsWith(out.text)).toBe(true);
    expect(out.tokens.join('')).toBe(out.text);
    const [good, bad] = await inContextIds(m.dir, C.prompt, [' happy', ' sad']);
    const logits = arr.get('logits')!.data;
    const want = out.ids.map((_: number, k: number) => { const lp = logSoftmax(logits.subarray((T - 1 + k) * m.V, (T + k) * m.V)); return lp[good] - lp[bad]; });
    expect(maxDiff(out.margins, want)).toBeLessThanOrEqual(F32_TOL);
  });

  it('vector: an ActAdd vector written as .npy holds h⁺ − h⁻ at the hook, and norm is its L2 norm', async () => {
    const file = path.join(tmp, 'v.npy');
    const out = await cli('vector', '--model', m.dir, '--method', 'actadd', '--hook', 'blocks.2.hook_resid_post', '--positive', A.prompt, '--negative', C.prompt, '--out', file);
    const bytes = fs.readFileSync(file);
    const headerLen = bytes.readUInt16LE(8); // .npy v1: magic(6) version(2) header_len(2) header
    const v = new Float32Array(bytes.buffer.slice(bytes.byteOffset + 10 + headerLen, bytes.byteOffset + bytes.length));
    const [ra, rc] = [m.arrays(A), m.arrays(C)];
    const want = Array.from(m.resid(ra, A, 3, A.n_prompt - 1), (x, i) => x - m.resid(rc, C, 3, C.n_prompt - 1)[i]);
    expect(out.d_model).toBe(m.D);
    expect(maxDiff(v, want)).toBeLessThanOrEqual(F32_TOL);
    expect(Math.abs(out.norm - l2(want))).toBeLessThanOrEqual(F32_TOL);
  });
});

it('sweep on llama-tiny: margin, kl and unsteered_margin against HF\'s unsteered and steered logits', async () => {
  const dir = sharedPath('fixtures', 'llama-tiny');
  const seq0 = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')).sequences[0];
  const plain = readReference(`${dir}/reference/seq0.safetensors`).get('logits')!;
  const steer = readReference(`${dir}/reference/steer_seq0.safetensors`);
  const [S, V] = plain.shape;
  const p = logSoftmax(plain.data.subarray((S - 1) * V)), q = logSoftmax(steer.get('logits')!.data.subarray((S - 1) * V));
  const vfile = path.join(tmp, 'steer.json');
  fs.writeFileSync(vfile, JSON.stringify(Array.from(steer.get('steering_vector')!.data)));
  const [g, b] = await inContextIds(dir, seq0.text, [' the', ' a']);
  const out = await cli('sweep', '--model', dir, '--prompt', seq0.text, '--good', ' the', '--bad', ' a', '--vector', vfile, '--layers', '1', '--doses', '0,1');
  let kl = 0;
  for (let i = 0; i < V; i++) kl += Math.exp(p[i]) * (p[i] - q[i]);
  expect(out.dose_key).toBe('alpha');
  expect(out.hooks).toEqual(['blocks.1.hook_resid_post']);
  expect(Math.abs(out.unsteered_margin - (p[g] - p[b]))).toBeLessThanOrEqual(F32_TOL);
  expect(Math.abs(out.margin[0][1] - (q[g] - q[b]))).toBeLessThanOrEqual(F32_TOL);
  expect(out.kl[0][0]).toBe(0);
  expect(Math.abs(out.kl[0][1] - kl)).toBeLessThanOrEqual(F32_TOL);
});
