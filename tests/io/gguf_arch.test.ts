import { describe, expect, it } from 'vitest';
import { GGUF_FAMILIES, type GgufMeta } from '../../workers/engine/io/gguf_arch';

/**
 * What a Gemma GGUF's metadata amounts to where the file says nothing (src/llama-model.cpp):
 * queries scaled by head_dim^−½ except in the 27B models ((hidden / heads)^−½: Gemma 2 with 46
 * layers, Gemma 3 with 62; gemma_pytorch config.py), Gemma 3's local layers by llama.cpp's fixed
 * 5:1 pattern or a per-layer list, none without a window. Values from Gemma 3 27B's and 1B's
 * published configs (5376 / 32 = 168; head_dim 256).
 */
function meta(values: Record<string, unknown>): GgufMeta {
  return {
    value: (k) => values[k],
    num(k, fallback) {
      const v = values[k];
      if (v === undefined && fallback !== undefined) return fallback;
      if (typeof v !== 'number') throw new Error(`missing ${k}`);
      return v;
    },
    refuse(k, why) { throw new Error(`metadata key "${k}" ${why}`); },
  };
}

const gemma3 = (layers: number, hidden: number, heads: number, extra: Record<string, unknown> = {}) => meta({
  'gemma3.embedding_length': hidden, 'gemma3.block_count': layers, 'gemma3.feed_forward_length': 4 * hidden,
  'gemma3.attention.head_count': heads, 'gemma3.attention.head_count_kv': heads / 2, 'gemma3.attention.key_length': 128,
  'gemma3.context_length': 131072, 'gemma3.attention.layer_norm_rms_epsilon': 1e-6, 'gemma3.rope.freq_base': 1e6,
  'gemma3.attention.sliding_window': 1024, ...extra,
});
const facts = { vocab: 262144, hasOutput: false, ropeFreqs: null };

describe('Gemma GGUF metadata → config (llama-model.cpp defaults)', () => {
  it('Gemma 3 27B (62 layers): query_pre_attn_scalar = hidden / heads = 168; 1B (26 layers): head_dim', () => {
    expect(GGUF_FAMILIES.gemma3.config(gemma3(62, 5376, 32), facts).query_pre_attn_scalar).toBe(168);
    expect(GGUF_FAMILIES.gemma3.config(gemma3(26, 1152, 4, { 'gemma3.attention.key_length': 256 }), facts).query_pre_attn_scalar).toBe(256);
  });
  it('Gemma 2 27B (46 layers): 4608 / 32 = 144; 9B (42 layers): head_dim 256; soft-caps default to 50 / 30', () => {
    const g2 = (layers: number) => meta({
      'gemma2.embedding_length': layers === 46 ? 4608 : 3584, 'gemma2.block_count': layers, 'gemma2.feed_forward_length': 14336,
      'gemma2.attention.head_count': layers === 46 ? 32 : 16, 'gemma2.attention.key_length': 128 * (layers === 46 ? 1 : 2),
      'gemma2.context_length': 8192, 'gemma2.attention.layer_norm_rms_epsilon': 1e-6, 'gemma2.attention.sliding_window': 4096,
    });
    expect(GGUF_FAMILIES.gemma2.config(g2(46), facts)).toMatchObject({ query_pre_attn_scalar: 144, attn_logit_softcapping: 50, final_logit_softcapping: 30, rope_theta: 10000 });
    expect(GGUF_FAMILIES.gemma2.config(g2(42), facts).query_pre_attn_scalar).toBe(256);
  });
  it('Gemma 3 layers: 5:1 by default, a per-layer list when the file has one, all global without a window', () => {
    expect(GGUF_FAMILIES.gemma3.config(gemma3(6, 512, 4), facts)).toMatchObject({ sliding_window: 1024, sliding_window_pattern: 6, rope_local_base_freq: 10000 });
    const list = [true, false, true, false, true, false];
    expect(GGUF_FAMILIES.gemma3.config(gemma3(6, 512, 4, { 'gemma3.attention.sliding_window_pattern': list }), facts).layer_types).toEqual(list.map((s) => (s ? 'sliding_attention' : 'full_attention')));
    expect(GGUF_FAMILIES.gemma3.config(gemma3(6, 512, 4, { 'gemma3.attention.sliding_window': 0 }), facts)).toMatchObject({ sliding_window: null, layer_types: new Array(6).fill('full_attention') });
  });
  it('refuses what Gemma 3 cannot be: an attention soft-cap, a pattern list of the wrong length, RoPE scaling "yarn"', () => {
    expect(() => GGUF_FAMILIES.gemma3.config(gemma3(6, 512, 4, { 'gemma3.attn_logit_softcapping': 50 }), facts)).toThrow(/metadata key "gemma3\.attn_logit_softcapping" is set, but Gemma 3 has no attention soft-capping/);
    expect(() => GGUF_FAMILIES.gemma3.config(gemma3(6, 512, 4, { 'gemma3.attention.sliding_window_pattern': [true] }), facts)).toThrow(/"gemma3\.attention\.sliding_window_pattern" holds 1 entries; expected one true\/false per layer \(6\)/);
    expect(() => GGUF_FAMILIES.gemma3.config(gemma3(6, 512, 4, { 'gemma3.rope.scaling.type': 'yarn' }), facts)).toThrow(/"gemma3\.rope\.scaling\.type" is "yarn"/);
  });
});
