import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { Analysis } from '../../workers/engine/api';
import { readReference, sharedPath } from '../shared';
import { F32_TOL, l2, matVec, maxDiff, rmsNorm } from '../reference_math';

/**
 * Attention sinks under GQA on HF transformers' own outputs: the llama-tiny fixture (4 query heads,
 * 2 KV heads, head_dim 16; ../shared/fixtures/README.md), seq0. α_k, the sink position and the value
 * norm at it are computed here from `attentions` and `hidden_states` (hidden_states[l] is the input
 * of block l for l < L) with the checkpoint's input_layernorm and v_proj: query head h reads KV head
 * h // (n_heads / n_kv_heads) (HF repeat_kv). Tolerance: the fixtures' suggested fp32 1e-4.
 */
const dir = sharedPath('fixtures', 'llama-tiny');
const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { text?: string; input_ids: number[] }[] };
const config = JSON.parse(fs.readFileSync(`${dir}/config.json`, 'utf8'));
const ref = readReference(`${dir}/reference/seq0.safetensors`);
const weights = readReference(`${dir}/model.safetensors`);
const L = config.num_hidden_layers, H = config.num_attention_heads, KV = config.num_key_value_heads, dHead = config.head_dim, D = config.hidden_size;
const seq = meta.sequences[0];
const T = seq.input_ids.length;

let e: Engine;
let a: Analysis;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(dir), new CpuBackend());
  a = await e.analyse({ prompt: seq.text!, good: { ids: [[3]] }, bad: { ids: [[4]] } });
});
afterAll(() => e.dispose());

const att = (l: number, h: number, i: number, k: number) => ref.get('attentions')!.data[((l * H + h) * T + i) * T + k];

describe('llama-tiny (GQA 4/2) seq0 sinks against HF attentions and hidden states', () => {
  it('reads seq0 as the fixture ids and the fixture really is GQA', () => {
    expect(a.ids).toEqual(seq.input_ids);
    expect([H, KV]).toEqual([4, 2]);
  });

  it('α_k = mean over queries i ≥ k of A[i,k], every layer, head and key', () => {
    const alpha = new Float64Array(L * H * T);
    for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) for (let k = 0; k < T; k++) {
      let s = 0;
      for (let i = k; i < T; i++) s += att(l, h, i, k);
      alpha[(l * H + h) * T + k] = s / (T - k);
    }
    expect(maxDiff(a.sinks.alpha, alpha)).toBeLessThanOrEqual(F32_TOL);
  });

  it('sink value norm ‖v_{h // 2}‖ at the sink position, v = W_v · RMSNorm(hidden_states[l])', () => {
    const hs = ref.get('hidden_states')!.data;
    for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
      const mass = Array.from({ length: T }, (_, k) => { let s = 0; for (let i = k; i < T; i++) s += att(l, h, i, k); return s; });
      const pos = mass.indexOf(Math.max(...mass));
      expect(a.sinks.sinkPos[l * H + h]).toBe(pos);
      const x = rmsNorm(hs.subarray((l * T + pos) * D, (l * T + pos + 1) * D), weights.get(`model.layers.${l}.input_layernorm.weight`)!.data, config.rms_norm_eps);
      const v = matVec(weights.get(`model.layers.${l}.self_attn.v_proj.weight`)!.data, x, KV * dHead);
      const kv = Math.floor(h / (H / KV));
      expect(Math.abs(a.sinks.sinkValueNorm[l * H + h] - l2(v.subarray(kv * dHead, (kv + 1) * dHead)))).toBeLessThanOrEqual(F32_TOL);
    }
  });
});
