import { describe, expect, it } from 'vitest';
import { rgb } from 'd3';
import { nodeColourScale } from '../../app/components/BranchTreeChart';
import { divergingScale, symmetricRange } from '../../app/lib/color_scale';
import type { BranchTree, TreeNode } from '../../workers/protocol';

/** A node whose tokens carry these margins (the other fields do not matter for colour). */
const node = (id: number, parent: number | null, margins: number[]): TreeNode => ({
  id, parent, start: 4, ids: margins.map(() => 0), tokens: margins.map(() => 'x'), logProbs: margins.map(() => -1), margins, entropy: margins.map(() => 1),
  top: [], settings: { temperature: 0, seed: 0, withInterventions: false } as unknown as TreeNode['settings'], stop: 'length', forwarded: margins.length,
});

const tree: BranchTree = {
  version: 2, model: 'm', prompt: 'p', chatTemplate: false, promptIds: [1, 2, 3, 4], promptTokens: ['a', 'b', 'c', 'd'], good: ' Tom', bad: ' Lily', futures: { good: { input: { text: ' Tom' } }, bad: { input: { text: ' Lily' } } }, maxNewTokens: 2,
  promptStats: { logProbs: [], margins: [], entropy: [], top: [] },
  nodes: [node(0, null, [1, 3]), node(1, 0, [-3])],
};

describe('one colour convention for margins across views', () => {
  it('a positive-margin branch node has the colour of a positive margin-heatmap cell (blue), a negative one red', () => {
    const scale = nodeColourScale(tree, 'final_margin');
    // The margin heatmap colours a cell with divergingScale(m), m from symmetricRange of its values.
    const heat = divergingScale(symmetricRange([3, -3], 'max').m);
    expect(scale.domain).toEqual([-3, 3]);
    expect(scale.color(3)).toBe(heat(3));
    expect(scale.color(-3)).toBe(heat(-3));
    const pos = rgb(scale.color(3)), neg = rgb(scale.color(-3));
    expect(pos.b, `positive Δ is blue (${scale.color(3)})`).toBeGreaterThan(pos.r);
    expect(neg.r, `negative Δ is red (${scale.color(-3)})`).toBeGreaterThan(neg.b);
  });
});
