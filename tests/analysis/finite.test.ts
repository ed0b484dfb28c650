import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { assertFiniteRun, locateNonFinite } from '../../workers/engine/model/span';
import { firstNonFinite } from '../../workers/engine/analysis/finite';
import { NonFiniteError } from '../../workers/engine/model/non_finite';
import { toIntervention } from '../../workers/engine/steering/spec';
import { memory, withConfig, withTensors } from '../hardening/model_variants';

/**
 * model/span.ts (issue #8): where the first NaN/±Inf of a forward pass appears. The faults are
 * planted with an `add` intervention whose dose overflows float32 (|α·v| > 3.4e38 = Inf) at a
 * chosen hook, position and dimension, so the expected site is known in closed form: that hook
 * (the first in hookNames order, every earlier one finite), that row, that value.
 */
const PROMPT = { prompt: 'Once upon a time there was a girl' };
const unit = (d: number, i: number) => Array.from({ length: d }, (_, j) => (j === i ? 1 : 0));

describe('firstNonFinite', () => {
  it('is the index of the first NaN or ±Infinity, −1 when every value is finite', () => {
    expect(firstNonFinite([])).toBe(-1);
    expect(firstNonFinite([1, -2, 3e38, -0])).toBe(-1);
    expect(firstNonFinite(Float32Array.of(1, 2, 3))).toBe(-1); // a typed array read one past its end would give undefined
    expect(firstNonFinite([NaN, 1])).toBe(0);
    expect(firstNonFinite([1, Infinity, NaN])).toBe(1);
    expect(firstNonFinite([0, 0, -Infinity])).toBe(2);
  });
});

describe('NonFiniteError', () => {
  it('names the value, hook, layer (blocks only), position and token; without a site it says only that the value is not finite', () => {
    const tail = 'Check the weights and any intervention at or before that hook (a dose too large for float32, a vector with NaN)';
    const a = new NonFiniteError('the logits', { hook: 'blocks.2.hook_mlp_out', layer: 2, position: 4, value: Infinity }, ' girl');
    expect(a.message).toBe(`the logits is not finite: the first non-finite value (Infinity) appears at blocks.2.hook_mlp_out (layer 2), position 4 (token " girl"). ${tail}`);
    expect(a.name).toBe('NonFiniteError');
    const b = new NonFiniteError('the margins', { hook: 'hook_embed', layer: null, position: 0, value: NaN });
    expect(b.message).toBe(`the margins is not finite: the first non-finite value (NaN) appears at hook_embed, position 0. ${tail}`);
    const c = new NonFiniteError('the log-probs', null);
    expect(c.message).toBe('the log-probs is not finite (NaN or Infinity)');
    expect(c.site).toBeNull();
  });
});

describe('locating the first non-finite activation (stories260K, 11 prompt tokens)', () => {
  let e: Engine;
  let ids: number[];
  let T: number;
  beforeAll(async () => {
    e = await Engine.load(memory(withTensors(() => {})), new CpuBackend());
  });
  afterAll(() => e.dispose());
  const at = (hook: string, v: number[], alpha: number, position: number) => toIntervention({ hook, type: 'add', vector: v, alpha, positions: [position] }, e.spec, { nPrompt: T });
  const load = () => {
    ids ??= e.encodePrompt(PROMPT);
    T = ids.length;
  };

  it('a healthy run: every activation and logit finite gives the logits site at position −1', async () => {
    load();
    expect(T).toBe(11);
    expect(await locateNonFinite(e.model, ids, T, [])).toEqual({ hook: 'logits', layer: null, position: -1, value: 0 });
  });

  it('the embeddings at position 0, dimension 0 (the very first value of the first hook)', async () => {
    load();
    expect(await locateNonFinite(e.model, ids, T, [at('hook_embed', unit(64, 0), 1e39, 0)])).toEqual({ hook: 'hook_embed', layer: null, position: 0, value: Infinity });
  });

  it('inside a block: the first row hook of that block, not its resid_post', async () => {
    load();
    expect(await locateNonFinite(e.model, ids, T, [at('blocks.3.hook_attn_out', unit(64, 5), 1e39, 2)])).toEqual({ hook: 'blocks.3.hook_attn_out', layer: 3, position: 2, value: Infinity });
    expect(await locateNonFinite(e.model, ids, T, [at('blocks.0.hook_resid_post', unit(64, 63), -1e39, 10)])).toEqual({ hook: 'blocks.0.hook_resid_post', layer: 0, position: 10, value: -Infinity });
  });

  it('the fine scan reads the bad block only: an earlier non-finite value overwritten before its block\'s resid_post is not named', async () => {
    load();
    // block 1: hook_attn_out overflows at position 2, and a patch of blocks.1.hook_resid_mid puts the clean run's finite row back
    const clean = await e.run(ids, { capture: ['blocks.1.hook_resid_mid'], logits: 'last' });
    const repair = { hook: 'blocks.1.hook_resid_mid', op: { kind: 'patch' as const, replacement: clean.captured.get('blocks.1.hook_resid_mid')! }, positions: [2] };
    const ivs = [at('blocks.1.hook_attn_out', unit(64, 5), 1e39, 2), repair, at('blocks.3.hook_mlp_out', unit(64, 9), -1e39, 6)];
    expect(await locateNonFinite(e.model, ids, T, ivs)).toEqual({ hook: 'blocks.3.hook_mlp_out', layer: 3, position: 6, value: -Infinity });
  });

  it('after the last block: the final norm, then the logits (every activation finite, W_U overflows)', async () => {
    load();
    expect(await locateNonFinite(e.model, ids, T, [at('ln_final.hook_normalized', unit(64, 7), 1e39, 4)])).toEqual({ hook: 'ln_final.hook_normalized', layer: null, position: 4, value: Infinity });
    // 3e38 in every dimension is finite; W_U times it is not (a logit of |Σ_d w_d|·3e38 > 3.4e38).
    const s = await locateNonFinite(e.model, ids, T, [at('ln_final.hook_normalized', Array(64).fill(1), 3e38, 4)]);
    expect(s).toMatchObject({ hook: 'logits', layer: null, position: 4 });
    expect(Number.isFinite(s.value)).toBe(false);
    // At position 0 the first non-finite logit is index 0 of the [T, d_vocab] logits: position 0, its own value.
    const s0 = await locateNonFinite(e.model, ids, T, [at('ln_final.hook_normalized', Array(64).fill(1), 3e38, 0)]);
    expect(s0).toMatchObject({ hook: 'logits', layer: null, position: 0 });
    expect(Number.isFinite(s0.value)).toBe(false);
  });

  it('assertFiniteRun: returns for finite values; refuses a non-finite one (also at index 0) with the site and its token', async () => {
    load();
    await expect(assertFiniteRun([1, -2], 'the margins', e.model, ids, T, [])).resolves.toBeUndefined();
    const ivs = [at('blocks.1.hook_resid_post', unit(64, 2), 1e39, 6)];
    const asked: number[] = [];
    const err = await assertFiniteRun([NaN, 1], 'the margins', e.model, ids, T, ivs, (p) => { asked.push(p); return `tok${p}`; }).catch((x) => x);
    expect(err).toBeInstanceOf(NonFiniteError);
    expect(err.site).toEqual({ hook: 'blocks.1.hook_resid_post', layer: 1, position: 6, value: Infinity });
    expect(asked).toEqual([6]);
    expect(err.message).toContain('appears at blocks.1.hook_resid_post (layer 1), position 6 (token "tok6"). Check');
    // a site at position 0 is a site (only −1 means "finite on the re-run")
    const first = await assertFiniteRun([Infinity], 'the margins', e.model, ids, T, [at('hook_embed', unit(64, 9), -1e39, 0)]).catch((x) => x);
    expect(first.site).toEqual({ hook: 'hook_embed', layer: null, position: 0, value: -Infinity });
  });

  it('assertFiniteRun: when the re-run is finite (position −1) or fails, the error has no site', async () => {
    load();
    const token = () => { throw new Error('no site: no token to name'); };
    const healthy = await assertFiniteRun([0, Infinity], 'the logits', e.model, ids, T, [], token).catch((x) => x);
    expect(healthy).toBeInstanceOf(NonFiniteError);
    expect([healthy.site, healthy.message]).toEqual([null, 'the logits is not finite (NaN or Infinity)']);
    const failed = await assertFiniteRun([NaN], 'the logits', e.model, [], 0, [], token).catch((x) => x); // nothing to re-run
    expect(failed).toBeInstanceOf(NonFiniteError);
    expect([failed.site, failed.message]).toEqual([null, 'the logits is not finite (NaN or Infinity)']);
  });
});

describe('a block index of two digits (stories260K with 12 blocks: blocks 5–11 copies of block 4)', () => {
  it('a fault in block 11 is located in block 11 (layer 11), at the first hook inside it', async () => {
    const files = withTensors((ts) => {
      const b4 = ts.filter((t) => t.name.startsWith('model.layers.4.'));
      for (let l = 5; l < 12; l++) ts.push(...b4.map((t) => ({ ...t, name: t.name.replace('model.layers.4.', `model.layers.${l}.`) })));
    }, withConfig((c) => { c.num_hidden_layers = 12; }));
    const e = await Engine.load(memory(files), new CpuBackend());
    try {
      expect(e.spec.nLayers).toBe(12);
      const ids = e.encodePrompt(PROMPT);
      const iv = toIntervention({ hook: 'blocks.11.hook_mlp_out', type: 'add', vector: unit(64, 1), alpha: 1e39, positions: [3] }, e.spec, { nPrompt: ids.length });
      expect(await locateNonFinite(e.model, ids, ids.length, [iv])).toEqual({ hook: 'blocks.11.hook_mlp_out', layer: 11, position: 3, value: Infinity });
    } finally {
      e.dispose();
    }
  });
});
