/**
 * SAE benchmark page: a JumpReLU SAE of Gemma Scope's 2B residual size (d_in 2304, d_sae 16384)
 * with seeded random weights, written as a SAELens folder in memory (cfg.json +
 * sae_weights.safetensors), sized by assertSaeFits before it is read (beside the host model's
 * bytes), loaded onto the host model's WebGpuBackend, then
 * - encoded and decoded on `tokens` positions of random activations (the SAE alone), and
 * - attached at blocks.0.hook_resid_post of the host model — a random Llama with d_model 2304
 *   (bench/run-sae.ts builds it) — for a forward of a `tokens`-token prompt capturing
 *   hook_sae_acts_post, against the same forward without the SAE.
 * Reports the estimate against the GPU bytes the load and the encode actually hold, and times (no
 * assertions: bench/run-sae.ts prints them beside the load average). Exposes `window.runSaeBench(options)`.
 */
import { WebGpuBackend } from '../workers/engine/backend/webgpu';
import { Engine } from '../workers/engine/engine';
import { HttpFiles, MemoryFiles } from '../workers/engine/io/model_files';
import { assertSaeFits } from '../workers/engine/sae/estimate';
import { readSae } from '../workers/engine/sae/files';
import { Sae, saeMemoryBytes } from '../workers/engine/sae/sae';
import { ACTIVATION_TOKENS } from '../workers/engine/model/estimate';
import { encodeSafetensors } from '../tools/safetensors_write';

export interface SaeBenchOptions {
  dIn: number; dSae: number; tokens: number; reps: number;
  /** URL of the host model folder (d_model = dIn), served by run-sae.ts. */
  hostUrl: string;
}

export interface SaeBenchResult {
  adapter: string;
  options: SaeBenchOptions;
  /** assertSaeFits' total for an encode of ACTIVATION_TOKENS positions, and saeMemoryBytes for `tokens`. */
  estimateBytes: number;
  estimateForTokens: { weightBytes: number; activationBytes: number; totalBytes: number };
  /** GPU bytes held after the load, and at most during an encode (memoryStats deltas, pool included). */
  loadedBytes: number;
  peakEncodeBytes: number;
  loadMs: number;
  /** encode + decode of `tokens` positions, read back, per rep. */
  encodeMs: number[];
  /** Mean L0 of the last encode (a sanity check that features fire). */
  meanL0: number;
  /** Host model: its label, GPU bytes after loading it (reserved when the SAE was sized). */
  host: { label: string; nLayers: number; dModel: number; bytes: number };
  /** Forward of the `tokens`-token prompt without the SAE, and with it attached capturing hook_sae_acts_post, per rep (ms). */
  forwardMs: number[];
  forwardSaeMs: number[];
  /** Mean L0 over the prompt's positions in the last SAE forward. */
  promptL0: number;
}

declare global { interface Window { runSaeBench: (o: SaeBenchOptions) => Promise<SaeBenchResult> } }

/** Deterministic standard normals (xorshift + Box–Muller). */
function randn(n: number, seed: number, scale: number): Float32Array {
  let s = seed >>> 0 || 1;
  const u = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return (s + 0.5) / 4294967296; };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()) * scale;
  return out;
}

window.runSaeBench = async (o: SaeBenchOptions): Promise<SaeBenchResult> => {
  const { dIn, dSae, tokens } = o;
  const W_dec = randn(dSae * dIn, 1, 1);
  for (let f = 0; f < dSae; f++) {
    const row = W_dec.subarray(f * dIn, (f + 1) * dIn);
    const n = Math.hypot(...row);
    for (let j = 0; j < dIn; j++) row[j] /= n;
  }
  const W_enc = new Float32Array(dIn * dSae);
  for (let f = 0; f < dSae; f++) for (let j = 0; j < dIn; j++) W_enc[j * dSae + f] = W_dec[f * dIn + j];
  const weights = encodeSafetensors([
    { name: 'W_enc', shape: [dIn, dSae], data: W_enc, dtype: 'F32' },
    { name: 'W_dec', shape: [dSae, dIn], data: W_dec, dtype: 'F32' },
    { name: 'b_enc', shape: [dSae], data: new Float32Array(dSae), dtype: 'F32' },
    { name: 'b_dec', shape: [dIn], data: new Float32Array(dIn), dtype: 'F32' },
    { name: 'threshold', shape: [dSae], data: new Float32Array(dSae).fill(1.5), dtype: 'F32' },
  ], {});
  const cfg = { architecture: 'jumprelu', d_in: dIn, d_sae: dSae, hook_name: 'blocks.0.hook_resid_post', apply_b_dec_to_input: false, normalize_activations: 'none' };
  const files = new MemoryFiles('random gemma-scope-sized SAE', new Map([['cfg.json', new TextEncoder().encode(JSON.stringify(cfg))], ['sae_weights.safetensors', weights]]));
  const b = await WebGpuBackend.create();
  const e = await Engine.load(new HttpFiles('random host model', o.hostUrl), b, undefined, { contextLength: tokens + 8 });
  try {
    if (e.spec.dModel !== dIn) throw new Error(`the host model has d_model ${e.spec.dModel}, the SAE d_in ${dIn}`);
    await b.sync();
    const hostBytes = b.memoryStats().bytes;
    const limits = { maxBufferSize: b.device.limits.maxBufferSize, maxStorageBufferBindingSize: b.device.limits.maxStorageBufferBindingSize, memoryBudget: 8 * 2 ** 30, device: b.description };
    const est = await assertSaeFits(files, '', limits, hostBytes);
    const before = b.memoryStats().bytes;
    const t0 = performance.now();
    const sae = new Sae(b, await readSae(files), e.spec);
    await b.sync();
    const loadMs = performance.now() - t0;
    const loadedBytes = b.memoryStats().bytes - before;
    const x = b.upload(randn(tokens * dIn, 7, 1), [tokens, dIn]);
    const encodeMs: number[] = [];
    let peak = 0, meanL0 = 0;
    for (let r = 0; r < o.reps; r++) {
      const t = performance.now();
      const { pre, acts } = sae.encode(x);
      const rec = sae.decode(acts);
      const f = await b.read(acts);
      await b.read(rec);
      encodeMs.push(performance.now() - t);
      peak = Math.max(peak, b.memoryStats().bytes - before - loadedBytes);
      meanL0 = f.reduce((s, v) => s + (v > 0 ? 1 : 0), 0) / tokens;
      for (const t2 of [pre, acts, rec]) b.release(t2);
    }
    b.release(x);

    // a prompt of `tokens` ids through the host model, with and without the SAE attached
    const ids = Array.from({ length: tokens }, (_, i) => (i === 0 ? 1 : 3 + ((i * 7919) % (e.spec.dVocab - 3))));
    const actsHook = `${cfg.hook_name}.hook_sae_acts_post`;
    const forwardMs: number[] = [], forwardSaeMs: number[] = [];
    let promptL0 = 0;
    await e.run(ids, { logits: 'last' }); // warm-up: pipelines compiled
    for (let r = 0; r < o.reps; r++) {
      let t = performance.now();
      await e.run(ids, { logits: 'last' });
      forwardMs.push(performance.now() - t);
      t = performance.now();
      const { captured } = await e.run(ids, { logits: 'last', capture: [actsHook], saes: [{ sae }] });
      forwardSaeMs.push(performance.now() - t);
      const f = captured.get(actsHook)!;
      promptL0 = f.reduce((s, v) => s + (v > 0 ? 1 : 0), 0) / tokens; // small: the random host's residual rarely passes θ = 1.5
    }
    sae.release();
    return {
      adapter: b.description, options: o, estimateBytes: est.totalBytes, estimateForTokens: saeMemoryBytes(dIn, dSae, tokens), loadedBytes, peakEncodeBytes: peak, loadMs, encodeMs, meanL0,
      host: { label: e.label, nLayers: e.spec.nLayers, dModel: e.spec.dModel, bytes: hostBytes }, forwardMs, forwardSaeMs, promptL0,
    };
  } finally {
    e.dispose();
  }
};

export { ACTIVATION_TOKENS };
