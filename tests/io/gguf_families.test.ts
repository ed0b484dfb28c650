import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hfToGguf } from '../../tools/gguf_write';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { openGguf } from '../../workers/engine/io/gguf';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { loadTransformer, type WeightDtype } from '../../workers/engine/model/load';
import { referenceLogits } from '../model/research_forward';
import { safetensorsWeights } from '../model/research_weights';
import { runCaptured } from '../model_run';
import { maxAbsDiff, readReference, sharedPath } from '../shared';
import { gemma3TinyFolder, GEMMA3_TINY } from './gemma3_tiny';

/**
 * GGUF files of the Qwen3, Llama 3 (RoPE scaling) and Gemma 2 / 3 families, written in llama.cpp's
 * layout by tools/gguf_write.ts (Qwen3: attn_q_norm / attn_k_norm; Llama 3: rope_freqs.weight;
 * Gemma: norms stored as 1 + w, post_attention_norm / ffn_norm / post_ffw_norm, no
 * query_pre_attn_scalar), load as the same model as the safetensors folder they came from:
 * F32 logits equal the safetensors-loaded ones (≤ 1e-5, every position) and HF's reference logits
 * (≤ 1e-4; the Gemma 3 model, which has no fixture, against the float64 forward of
 * tests/model/research_forward.ts over its safetensors); Q8_0 files equal the safetensors quantised
 * on load (the same blocks: ≤ 1e-5) and lie far from float32.
 */

/** A folder in memory: model.gguf (or config.json + model.safetensors) beside the tokenizer. */
function folder(dir: string, gguf: Uint8Array | null): MemoryFiles {
  const files = new Map<string, Uint8Array>();
  for (const f of gguf ? ['tokenizer.json'] : ['config.json', 'model.safetensors', 'tokenizer.json']) files.set(f, new Uint8Array(fs.readFileSync(path.join(dir, f))));
  if (gguf) files.set('model.gguf', gguf);
  return new MemoryFiles(gguf ? 'gguf' : 'safetensors', files);
}

/** Logits [S, V] of `ids` from a folder on the CPU backend. */
async function logits(files: MemoryFiles, ids: number[], weightDtype: WeightDtype = 'f32'): Promise<Float32Array> {
  const b = new CpuBackend();
  try {
    const { model } = await loadTransformer(files, b, undefined, { weightDtype });
    return (await runCaptured(b, model, ids, [])).logits;
  } finally {
    b.dispose();
  }
}

const sequences = (dir: string) => (JSON.parse(fs.readFileSync(path.join(dir, 'reference/meta.json'), 'utf8')) as { sequences: { name: string; input_ids: number[] }[] }).sequences;
const text = (b: Uint8Array) => new TextDecoder('latin1').decode(b.subarray(0, 16384));

/** A copy of `dir` with config.json changed by `edit`, in a temporary folder. */
function withConfig(dir: string, edit: (c: Record<string, unknown>) => void): string {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-gguf-'));
  for (const f of ['model.safetensors', 'tokenizer.json']) fs.copyFileSync(path.join(dir, f), path.join(out, f));
  const c = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  edit(c);
  fs.writeFileSync(path.join(out, 'config.json'), JSON.stringify(c));
  return out;
}

/** Every occurrence of an ASCII string replaced by one of the same length (header keys and values). */
function replaceAll(b: Uint8Array, from: string, to: string): Uint8Array {
  const f = new TextEncoder().encode(from), t = new TextEncoder().encode(to);
  for (let i = 0; i + f.length <= b.length; i++) if (b.subarray(i, i + f.length).every((x, j) => x === f[j])) b.set(t, i);
  return b;
}

describe.each([
  { fixture: 'qwen3-tiny', arch: 'qwen3', marker: 'blk.0.attn_q_norm.weight' },
  { fixture: 'llama3-tiny', arch: 'llama', marker: 'rope_freqs.weight' },
])('$fixture as llama.cpp GGUF ($arch)', ({ fixture, arch, marker }) => {
  const dir = sharedPath('fixtures', fixture);

  it('F32: every sequence\'s logits equal the safetensors-loaded ones (≤ 1e-5) and HF\'s (≤ 1e-4)', async () => {
    const bytes = hfToGguf(dir, 'f32');
    expect(text(bytes)).toContain(`general.architecture`);
    expect(text(bytes)).toContain(marker);
    const ck = await openGguf(folder(dir, bytes));
    expect(ck.arch).toBe(arch);
    let vsSafetensors = 0, vsHf = 0;
    for (const s of sequences(dir)) {
      const z = await logits(folder(dir, bytes), s.input_ids);
      vsSafetensors = Math.max(vsSafetensors, maxAbsDiff(z, await logits(folder(dir, null), s.input_ids)));
      vsHf = Math.max(vsHf, maxAbsDiff(z, readReference(path.join(dir, 'reference', `${s.name}.safetensors`)).get('logits')!.data));
    }
    console.log(`${fixture} F32 GGUF: max |Δ| ${vsSafetensors.toExponential(2)} vs safetensors, ${vsHf.toExponential(2)} vs HF`);
    expect(vsSafetensors).toBeLessThanOrEqual(1e-5);
    expect(vsHf).toBeLessThanOrEqual(1e-4);
  });

  it('Q8_0: the logits of the safetensors quantised on load (≤ 1e-5), far from float32', async () => {
    const s = sequences(dir)[1];
    const z = await logits(folder(dir, hfToGguf(dir, 'q8_0')), s.input_ids);
    expect(maxAbsDiff(z, await logits(folder(dir, null), s.input_ids, 'q8_0'))).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(z, readReference(path.join(dir, 'reference', `${s.name}.safetensors`)).get('logits')!.data)).toBeGreaterThan(1e-3);
  });
});

describe('llama3-tiny: Llama 3 RoPE scaling travels as rope_freqs.weight', () => {
  const dir = sharedPath('fixtures', 'llama3-tiny');
  it('the file has no llama.rope.scaling.type; the config carries head_dim / 2 divisors, 1 at the highest frequency and the factor at the lowest', async () => {
    const bytes = hfToGguf(dir, 'f32');
    expect(text(bytes)).not.toContain('llama.rope.scaling.type');
    const { config } = await openGguf(folder(dir, bytes));
    const f = (config.rope_scaling as { rope_type: string; freq_factors: number[] });
    expect(f.rope_type).toBe('freq_factors');
    expect(f.freq_factors).toHaveLength(8);
    // rope_scaling of config.json: factor 8, original_max_position_embeddings 64, high_freq_factor 4
    expect(f.freq_factors[0]).toBe(1);
    expect(f.freq_factors[7]).toBe(8);
  });
  it('a qwen3 file holding rope_freqs.weight is refused, naming the tensor', async () => {
    const bytes = replaceAll(hfToGguf(dir, 'f32'), 'llama', 'qwen3');
    await expect(openGguf(folder(dir, bytes))).rejects.toThrow(/tensor "rope_freqs\.weight" has no counterpart in the "qwen3" architecture/);
  });
});

describe('qwen3-tiny with linear RoPE scaling and a refused scaling type', () => {
  const dir = withConfig(sharedPath('fixtures', 'qwen3-tiny'), (c) => { c.rope_scaling = { rope_type: 'linear', factor: 4 }; });
  it('linear ×4: qwen3.rope.scaling.type / .factor load as the safetensors model with that rope_scaling (≤ 1e-5)', async () => {
    const ids = sequences(sharedPath('fixtures', 'qwen3-tiny'))[0].input_ids;
    const z = await logits(folder(dir, hfToGguf(dir, 'f32')), ids);
    expect(maxAbsDiff(z, await logits(folder(dir, null), ids))).toBeLessThanOrEqual(1e-5);
    // and the scaling changed the model
    expect(maxAbsDiff(z, await logits(folder(sharedPath('fixtures', 'qwen3-tiny'), null), ids))).toBeGreaterThan(1e-3);
  });
  it('qwen3.rope.scaling.type "yarn__" is refused before any weight is read, naming the key', async () => {
    const bytes = replaceAll(hfToGguf(dir, 'f32'), 'linear', 'yarn__');
    await expect(openGguf(folder(dir, bytes))).rejects.toThrow(/metadata key "qwen3\.rope\.scaling\.type" is "yarn__": only "none" and "linear"/);
  });
});

describe('tiny Gemma 3 (made here) as llama.cpp GGUF (gemma3)', () => {
  const dir = gemma3TinyFolder();
  const ids = [511, 72, 101, 300, 32, 256, 400, 13, 99, 7, 260, 480, 101, 300, 32, 256];

  it('the metadata carry the window, the two RoPE bases and the 1 + w norms; query_pre_attn_scalar comes back as head_dim', async () => {
    const ck = await openGguf(folder(dir, hfToGguf(dir, 'f32')));
    expect(ck.config).toMatchObject({ model_type: 'gemma3_text', sliding_window: 4, sliding_window_pattern: 6, rope_theta: 1_000_000, rope_local_base_freq: 10000, query_pre_attn_scalar: 32, final_logit_softcapping: null });
    // the file's norm weights are 1 + w; the import hands back HF's w
    const hf = safetensorsWeights(path.join(dir, 'model.safetensors')).rows('model.layers.0.input_layernorm.weight', 0, 1);
    expect(maxAbsDiff(ck.source.get('model.layers.0.input_layernorm.weight').data, hf)).toBeLessThanOrEqual(1e-7);
  });

  it('F32: logits at all 16 positions (window 4 matters) equal the safetensors-loaded ones (≤ 1e-5); over 4 tokens, the float64 forward (≤ 1e-4)', async () => {
    const bytes = hfToGguf(dir, 'f32');
    const z = await logits(folder(dir, bytes), ids);
    expect(maxAbsDiff(z, await logits(folder(dir, null), ids))).toBeLessThanOrEqual(1e-5);
    const short = await logits(folder(dir, bytes), ids.slice(0, 4));
    const ref = referenceLogits(GEMMA3_TINY, safetensorsWeights(path.join(dir, 'model.safetensors')), ids.slice(0, 4));
    const last = short.subarray(3 * GEMMA3_TINY.vocab_size);
    console.log(`gemma3-tiny F32 GGUF: max |Δ| ${maxAbsDiff(z, await logits(folder(dir, null), ids)).toExponential(2)} vs safetensors, ${maxAbsDiff(last, ref).toExponential(2)} vs float64 forward`);
    expect(Math.max(...Array.from(ref, Math.abs))).toBeGreaterThan(0.1);
    expect(maxAbsDiff(last, ref)).toBeLessThanOrEqual(1e-4);
  });

  it('Q8_0: the logits of the safetensors quantised on load (≤ 1e-5), far from float32', async () => {
    const z = await logits(folder(dir, hfToGguf(dir, 'q8_0')), ids);
    expect(maxAbsDiff(z, await logits(folder(dir, null), ids, 'q8_0'))).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(z, await logits(folder(dir, null), ids))).toBeGreaterThan(1e-3);
  });
});

describe('gemma2-tiny as llama.cpp GGUF (gemma2)', () => {
  const fixture = sharedPath('fixtures', 'gemma2-tiny');
  it('is refused by the writer: its query_pre_attn_scalar 32 is not head_dim 24, and llama.cpp\'s files carry none', () => {
    expect(() => hfToGguf(fixture, 'f32')).toThrow(/query_pre_attn_scalar 32: llama\.cpp's Gemma files carry none and scale by 24\^-0\.5/);
  });
  it('with query_pre_attn_scalar = head_dim: logits equal the safetensors-loaded ones (≤ 1e-5; soft-caps 5 / 3 and window 6 from the metadata)', async () => {
    const dir = withConfig(fixture, (c) => { c.query_pre_attn_scalar = 24; });
    const ids = sequences(fixture)[0].input_ids;
    const z = await logits(folder(dir, hfToGguf(dir, 'f32')), ids);
    expect(maxAbsDiff(z, await logits(folder(dir, null), ids))).toBeLessThanOrEqual(1e-5);
  });
});
