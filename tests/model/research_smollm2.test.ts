import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../workers/engine/engine';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { smolLM2Checkpoint } from '../../tools/research_checkpoints';
import { RESEARCH_CONFIGS } from '../../tools/research_configs';

/**
 * The SmolLM2-135M-shaped random checkpoint (real config, 49,152-token vocabulary, F16 on disk)
 * loads from its folder as a user's would (Node, CPU backend), and its logits for one token equal a
 * float64 forward written here from the file's own bytes (parsed here, not by the engine): at
 * position 0 attention returns each head's own value vector and RoPE is the identity.
 */
const C = RESEARCH_CONFIGS['smollm2-135m'];

/** Every tensor of an F16 safetensors file as float64, parsed here. */
function readF16(file: string): Map<string, Float64Array> {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString()) as Record<string, { dtype: string; data_offsets: [number, number] }>;
  const out = new Map<string, Float64Array>();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [a, b] = t.data_offsets;
    const v = new Float64Array((b - a) / 2);
    for (let i = 0; i < v.length; i++) {
      const h = buf.readUInt16LE(8 + n + a + 2 * i);
      const e = (h >> 10) & 31, m = h & 1023, s = h & 0x8000 ? -1 : 1;
      v[i] = s * (e === 0 ? m * 2 ** -24 : e === 31 ? NaN : (1 + m / 1024) * 2 ** (e - 15));
    }
    out.set(name, v);
  }
  return out;
}

const norm = (x: Float64Array, w: Float64Array, eps: number) => {
  const ms = x.reduce((s, v) => s + v * v, 0) / x.length;
  return x.map((v, i) => (v / Math.sqrt(ms + eps)) * w[i]);
};
const mv = (W: Float64Array, x: Float64Array, rows: number) => {
  const cols = x.length, y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) { let s = 0; for (let c = 0; c < cols; c++) s += W[r * cols + c] * x[c]; y[r] = s; }
  return y;
};

describe('SmolLM2-135M research-size checkpoint', () => {
  it('loads from the folder on the CPU backend; one-token logits equal a float64 forward (max |Δ| < 2e-3)', async () => {
    const dir = smolLM2Checkpoint();
    const engine = await Engine.load(new NodeFiles(dir), new CpuBackend());
    expect(engine.spec.dVocab).toBe(C.vocab_size);
    expect(engine.spec.nLayers).toBe(C.num_hidden_layers);
    const token = 12345;
    const { logits } = await engine.run([token], { logits: 'last' });
    engine.dispose();

    const W = readF16(path.join(dir, 'model.safetensors'));
    const D = C.hidden_size, hd = C.head_dim, H = C.num_attention_heads, Hkv = C.num_key_value_heads, F = C.intermediate_size;
    let x = W.get('model.embed_tokens.weight')!.slice(token * D, (token + 1) * D);
    for (let l = 0; l < C.num_hidden_layers; l++) {
      const p = `model.layers.${l}.`, g = (n: string) => W.get(p + n)!;
      const h = norm(x, g('input_layernorm.weight'), C.rms_norm_eps);
      const v = mv(g('self_attn.v_proj.weight'), h, Hkv * hd);
      const z = new Float64Array(H * hd);
      for (let q = 0; q < H; q++) z.set(v.subarray((Math.floor(q / (H / Hkv))) * hd, (Math.floor(q / (H / Hkv)) + 1) * hd), q * hd);
      x = x.map((xi, i) => xi + mv(g('self_attn.o_proj.weight'), z, D)[i]);
      const h2 = norm(x, g('post_attention_layernorm.weight'), C.rms_norm_eps);
      const gate = mv(g('mlp.gate_proj.weight'), h2, F), up = mv(g('mlp.up_proj.weight'), h2, F);
      const act = gate.map((a, i) => (a / (1 + Math.exp(-a))) * up[i]);
      const down = mv(g('mlp.down_proj.weight'), act, D);
      x = x.map((xi, i) => xi + down[i]);
    }
    const ref = mv(W.get('model.embed_tokens.weight')!, norm(x, W.get('model.norm.weight')!, C.rms_norm_eps), C.vocab_size);
    let worst = 0, refArg = 0, arg = 0;
    for (let i = 0; i < C.vocab_size; i++) {
      worst = Math.max(worst, Math.abs(logits[i] - ref[i]));
      if (ref[i] > ref[refArg]) refArg = i;
      if (logits[i] > logits[arg]) arg = i;
    }
    expect(Number.isFinite(worst)).toBe(true);
    expect(worst).toBeLessThan(2e-3);
    expect(arg).toBe(refArg);
  }, 120_000);
});
