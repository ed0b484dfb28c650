/**
 * Planted cases of the Mechanisms study with known answers (issue 25 "Done means"):
 * - set B = set A with its futures swapped, on stories260K: the same prompts give the same
 *   directions and probes (cos 1), B's margin is −A's (selectivity exactly 1 both ways), the probe
 *   scores agree on the pool (r = 1), verdict "shared";
 * - a synthetic Llama whose blocks write nothing (o_proj = down_proj = 0: the residual stream is the
 *   token embedding), where A's classes differ only along e0 and B's along e1 by construction, and
 *   each set's futures read only its own axis: cos 0, selectivity 0 (steering along e0 changes B's
 *   margin only through the final RMSNorm's scale, which moves B's two classes by equal and opposite
 *   amounts), r = 0, verdict "independent".
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseLabelledSet } from '../../workers/engine/io/prompt_set';
import { mechanismsStudy, type Behaviour } from '../../workers/engine/studies/mechanisms';
import { encodeSafetensors } from '../../tools/safetensors_write';
import { sharedPath } from '../shared';

let stories: Engine;
beforeAll(async () => {
  stories = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
}, 120_000);
afterAll(() => stories.dispose());

describe('planted: set B = set A with the futures swapped', () => {
  it('gives direction cosine 1, probe cosine 1, selectivity 1 both ways, natural r = 1 and the verdict "shared"', async () => {
    const s = parseLabelledSet('happy_sad.json', fs.readFileSync('public/steering/happy_sad.json', 'utf8'));
    const a: Behaviour = { name: 'happy/sad', positive: s.positive, negative: s.negative, good: { text: ' happy' }, bad: { text: ' sad' } };
    const b: Behaviour = { ...a, name: 'sad/happy', good: { text: ' sad' }, bad: { text: ' happy' } };
    const r = await mechanismsStudy(stories, { a, b, layers: [1, 3], dose: 6, causal: false, bootstrap: { resamples: 200 } });
    for (let i = 0; i < 2; i++) {
      expect(r.cosCaa[i]).toBeCloseTo(1, 12);
      expect(r.cosProbe[i]).toBeCloseTo(1, 10);
      expect(r.naturalCorr[i]).toBeCloseTo(1, 10);
      // B's margin is −A's on every prompt, under either direction (the two directions are one).
      expect(r.crossSteer.aOnB[i].mean).toBeCloseTo(-r.crossSteer.aOnA[i].mean, 5);
      expect(r.selectivityA[i]).toBeCloseTo(1, 5);
      expect(r.selectivityB[i]).toBeCloseTo(1, 5);
      expect(Math.abs(r.crossSteer.aOnA[i].mean)).toBeGreaterThan(0.05);
      expect(r.verdict[i].kind).toBe('shared');
    }
  }, 120_000);
});

/** Model folder of a 2-block Llama (d = 8, stories260K's tokenizer) whose blocks add nothing. */
function zeroBlockLlama(dir: string, embed: (id: number) => number[], unembed: Map<number, number[]>): void {
  const D = 8, V = 512, F = 8, layers = 2;
  const config = {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: D, intermediate_size: F, num_hidden_layers: layers,
    num_attention_heads: 2, num_key_value_heads: 2, vocab_size: V, max_position_embeddings: 64, rms_norm_eps: 1e-6, rope_theta: 10000,
    tie_word_embeddings: false, hidden_act: 'silu', bos_token_id: 1, eos_token_id: 2, torch_dtype: 'float32',
  };
  const filled = (n: number, v = 0) => new Float32Array(n).fill(v);
  const random = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 7919 + i * 104729) * 0.5);
  const t = [
    { name: 'model.embed_tokens.weight', shape: [V, D], data: Float32Array.from({ length: V * D }, (_, k) => embed(Math.floor(k / D))[k % D]) },
    { name: 'model.norm.weight', shape: [D], data: filled(D, 1) },
    { name: 'lm_head.weight', shape: [V, D], data: Float32Array.from({ length: V * D }, (_, k) => unembed.get(Math.floor(k / D))?.[k % D] ?? 0) },
  ];
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    t.push(
      { name: `${p}input_layernorm.weight`, shape: [D], data: filled(D, 1) },
      { name: `${p}post_attention_layernorm.weight`, shape: [D], data: filled(D, 1) },
      { name: `${p}self_attn.q_proj.weight`, shape: [D, D], data: random(D * D, 1 + l) },
      { name: `${p}self_attn.k_proj.weight`, shape: [D, D], data: random(D * D, 11 + l) },
      { name: `${p}self_attn.v_proj.weight`, shape: [D, D], data: random(D * D, 21 + l) },
      { name: `${p}self_attn.o_proj.weight`, shape: [D, D], data: filled(D * D) },
      { name: `${p}mlp.gate_proj.weight`, shape: [F, D], data: random(F * D, 31 + l) },
      { name: `${p}mlp.up_proj.weight`, shape: [F, D], data: random(F * D, 41 + l) },
      { name: `${p}mlp.down_proj.weight`, shape: [D, F], data: filled(D * F) },
    );
  }
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(sharedPath('models', 'stories260K', f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensors(t.map((x) => ({ ...x, dtype: 'F32' as const }))));
}

describe('planted: two behaviours orthogonal by construction (synthetic model)', () => {
  it('gives direction and probe cosine 0, selectivity ≈ 0 both ways, natural r = 0 and the verdict "independent"', async () => {
    const starts = ['The cat', 'The dog', 'A bird'];
    const a: Behaviour = { name: 'glad/sad', positive: starts.map((x) => `${x} was glad`), negative: starts.map((x) => `${x} was sad`), good: { text: ' yes' }, bad: { text: ' no' } };
    const b: Behaviour = { name: 'Tom/Sue', positive: starts.map((x) => `${x} saw Tom`), negative: starts.map((x) => `${x} saw Sue`), good: { text: ' up' }, bad: { text: ' down' } };
    // The last token of each class, one per class, and the futures' first tokens (stories260K's tokenizer).
    const last = [a.positive, a.negative, b.positive, b.negative].map((ps) => {
      const ids = new Set(ps.map((p) => stories.encodePrompt({ prompt: p }).at(-1)!));
      expect(ids.size).toBe(1);
      return [...ids][0];
    });
    expect(new Set(last).size).toBe(4);
    const fut = (f: Behaviour['good']) => stories.resolveFuture(stories.encodePrompt({ prompt: 'The cat' }), f, { prompt: 'The cat' }).firstIds[0];
    const [ga, ba, gb, bb] = [fut(a.good), fut(a.bad), fut(b.good), fut(b.bad)];
    // Embeddings: c (orthogonal to e0, e1) for every token; c ± e0 ends A's classes, c ± e1 B's.
    const c = [0, 0, 2, 1, 1, 0, 0.5, 0];
    const axis = new Map([[last[0], [0, 1]], [last[1], [0, -1]], [last[2], [1, 1]], [last[3], [1, -1]]]);
    const embed = (id: number) => { const v = [...c]; const ax = axis.get(id); if (ax) v[ax[0]] += ax[1]; return v; };
    const e0 = [1, 0, 0, 0, 0, 0, 0, 0], e1 = [0, 1, 0, 0, 0, 0, 0, 0], neg = (v: number[]) => v.map((x) => -x);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mech-orthogonal-'));
    zeroBlockLlama(dir, embed, new Map([[ga, e0], [ba, neg(e0)], [gb, e1], [bb, neg(e1)]]));
    const m = await Engine.load(new NodeFiles(dir), new CpuBackend());
    try {
      const r = await mechanismsStudy(m, { a, b, dose: 3, causal: false, bootstrap: { resamples: 200 } });
      for (let i = 0; i < 2; i++) {
        expect(Math.abs(r.cosCaa[i]!)).toBeLessThan(1e-7);
        expect(Math.abs(r.cosProbe[i]!)).toBeLessThan(1e-6);
        expect(Math.abs(r.naturalCorr[i]!)).toBeLessThan(1e-6);
        // Own reach: A's margin 2h₀/rms(h) rises on both classes; B's moves by ± the same amount on its two classes.
        const rms = (h: number[]) => Math.sqrt(h.reduce((s, x) => s + x * x, 0) / 8 + 1e-6);
        const hA = (sgn: number, alpha: number) => { const h = [...c]; h[0] = sgn + alpha; return h; };
        const reachA = ([1, -1].map((sg) => 2 * hA(sg, 3)[0] / rms(hA(sg, 3)) - 2 * sg / rms(hA(sg, 0))).reduce((s, x) => s + x, 0)) / 2;
        expect(r.crossSteer.aOnA[i].mean).toBeCloseTo(reachA, 4);
        expect(r.crossSteer.bOnB[i].mean).toBeCloseTo(reachA, 4);
        expect(Math.abs(r.crossSteer.aOnB[i].mean)).toBeLessThan(1e-5);
        expect(r.selectivityA[i]!).toBeLessThan(1e-5);
        expect(r.selectivityB[i]!).toBeLessThan(1e-5);
        expect(r.verdict[i].kind).toBe('independent');
      }
    } finally {
      m.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
