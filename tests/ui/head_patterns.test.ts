/**
 * The All heads view's numbers (app/lib/head_patterns.ts splitHeads over the worker's capture of
 * blocks.{l}.attn.hook_pattern, the same Engine.run the worker's `activations` and `pattern`
 * methods call) against the golden attention probabilities of stories260K
 * (../shared/models/stories260K/reference: attn_probs [L, H, T, T], a float64 numpy forward;
 * README: a float32 implementation lands within about 1e-4), for every layer and head; and bad
 * captures refused with their sizes.
 */
import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../workers/engine/engine';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { splitHeads } from '../../app/lib/head_patterns';
import { maxAbsDiff, readReference, sharedPath } from '../shared';

const DIR = sharedPath('models', 'stories260K');
const TOL = 1e-4;
let engine: Engine;
beforeAll(async () => { engine = await Engine.load(new NodeFiles(DIR), new CpuBackend()); });
afterAll(() => engine.dispose());

describe('splitHeads: every head of a layer as drawn', () => {
  const ref = JSON.parse(fs.readFileSync(`${DIR}/reference/reference.json`, 'utf8')) as { prompts: { name: string; sequence_ids: number[]; n_positions: number }[] };
  for (const p of ref.prompts) {
    it(`${p.name}: head h of layer l equals the golden attn_probs[l, h] within ${TOL}, for every l and h`, async () => {
      const golden = readReference(`${DIR}/reference/${p.name}.safetensors`).get('attn_probs')!;
      const [L, H, T] = golden.shape;
      expect(T).toBe(p.n_positions);
      const ids = p.sequence_ids.slice(0, T); // README: every array was computed on sequence_ids[:T]
      const hooks = Array.from({ length: L }, (_, l) => `blocks.${l}.attn.hook_pattern`);
      const { captured } = await engine.run(ids, { capture: hooks });
      for (let l = 0; l < L; l++) {
        const heads = splitHeads(captured.get(hooks[l])!, H, T);
        expect(heads).toHaveLength(H);
        for (let h = 0; h < H; h++) {
          const want = golden.data.subarray(((l * H) + h) * T * T, ((l * H) + h + 1) * T * T);
          expect(maxAbsDiff(heads[h], want), `L${l} H${h}`).toBeLessThanOrEqual(TOL);
        }
      }
    });
  }

  it('refuses a capture whose size is not n_heads × T × T, and a non-positive n_heads or T, naming the sizes', () => {
    expect(() => splitHeads(new Float32Array(2 * 3 * 3 - 1), 2, 3)).toThrow(/holds 17 values, not n_heads × T × T = 2 × 3 × 3 = 18/);
    expect(() => splitHeads(new Float32Array(0), 0, 3)).toThrow(/n_heads = 0 and T = 3 must be positive integers/);
    expect(() => splitHeads(new Float32Array(4), 1, 2.5)).toThrow(/positive integers/);
  });
});
