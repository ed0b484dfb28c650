import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import type { Tensor } from '../../workers/engine/backend/backend';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { weightTensors } from '../../workers/engine/model/transformer';
import type { ModelWeights } from '../../workers/engine/arch/spec';
import { sharedPath } from '../shared';

/**
 * Transformer.releaseWeights frees every weight tensor once, found by walking the weights rather
 * than by a hand-written list of BlockWeights fields (a field added later cannot be forgotten).
 */
const t = (name: string): Tensor => ({ shape: [1], size: 1, name } as Tensor);

describe('every weight tensor is released, each once', () => {
  it('a field the listing never named (a new BlockWeights field) is found; a tied W_U is W_E; storage is not walked; undefined and null fields are skipped', () => {
    const embed = t('embed');
    const w = {
      embed, unembed: embed, lnFinal: { w: t('lnf') },
      blocks: [{ ln1: { w: t('ln1'), b: t('ln1.b') }, q: { w: t('q') }, qNorm: t('qnorm'), someNewNorm: { w: t('new') }, extra: [t('in a list')], gate: undefined, unset: null,
        // a tensor has both a shape array and a numeric size: a container with only one of them is walked
        sized: { size: 2, w: t('in sized') }, shaped: { shape: [2], w: t('in shaped') } }],
    } as unknown as ModelWeights;
    const names = [...weightTensors(w)].map((x) => (x as Tensor & { name: string }).name);
    expect(names.sort()).toEqual(['embed', 'in a list', 'in shaped', 'in sized', 'ln1', 'ln1.b', 'lnf', 'new', 'q', 'qnorm']);
  });

  it('on fixtures of every block layout (Gemma 2 sandwich norms, Qwen3 q/k norms, GPT-2 biases and learned positions) the backend releases each weight once', async () => {
    for (const [fixture, perBlock] of [['gemma2-tiny', 11], ['qwen3-tiny', 11], ['gpt2-tiny', 16]] as const) {
      const b = new CpuBackend();
      try {
        const { model } = await loadTransformer(new NodeFiles(sharedPath('fixtures', fixture)), b, undefined, { contextLength: 8 });
        const released: Tensor[] = [];
        const release = b.release.bind(b);
        b.release = (x: Tensor) => { released.push(x); release(x); };
        model.dispose();
        released.length = 0; // the KV cache
        model.releaseWeights();
        expect(new Set(released).size, fixture).toBe(released.length);
        expect(new Set(released), fixture).toEqual(weightTensors(model.weights));
        // per block: Gemma 2 ln1, ln2, q, k, v, o, post-attention and post-MLP norms, gate, up, down; Qwen3 the same with q_norm, k_norm instead of the sandwich norms; GPT-2 weight and bias of ln1, ln2, q, k, v, o, up, down
        const L = model.spec.nLayers;
        const blockTensors = new Set(model.weights.blocks.flatMap((bw) => [...weightTensors({ blocks: [bw] } as unknown as ModelWeights)]));
        expect(blockTensors.size, fixture).toBe(L * perBlock);
      } finally {
        b.dispose();
      }
    }
  });
});
