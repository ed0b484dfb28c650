import { describe, expect, it } from 'vitest';
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { blockName, blockShort, hookName, hookShort, residName, residShort } from '../../app/lib/layer_names';
import { hookOfLensRow, lensRowOf } from '../../app/lib/hooks';
import { ReportFigure } from '../../app/components/ReportFigure';

describe('one name per layer in every view (TransformerLens blocks.l; trials saw "layer 0 embed", "L0", "block 0", "row N")', () => {
  it('residual row r is "embed" at the embeddings and "L{r−1}" after block r − 1, with its hook', () => {
    expect([0, 1, 2, 5].map(residShort)).toEqual(['embed', 'L0', 'L1', 'L4']);
    expect(residName(0, 5)).toBe('embed · blocks.0.hook_resid_pre');
    expect(residName(3, 5)).toBe('L2 · blocks.2.hook_resid_post');
    expect(residName(5, 5)).toBe('L4 · blocks.4.hook_resid_post, final');
  });

  it('a block and every hook inside it share the block\'s name; hook_resid_pre of block l is the stream block l − 1 wrote', () => {
    expect(blockShort(3)).toBe('L3');
    expect(hookShort('blocks.3.hook_attn_out')).toBe('L3');
    expect(hookShort('blocks.3.attn.hook_z')).toBe('L3');
    expect(hookShort('blocks.3.hook_resid_post')).toBe('L3');
    expect(hookShort('blocks.4.hook_resid_pre')).toBe('L3');
    expect(hookShort('blocks.0.hook_resid_pre')).toBe('embed');
    expect(hookShort('hook_embed')).toBe('embed');
    expect(hookShort('ln_final.hook_normalized')).toBe('final');
    expect(hookName('blocks.2.hook_resid_pre')).toBe('L1 · blocks.2.hook_resid_pre');
    expect(blockName(2, 'hook_mlp_out')).toBe('L2 · blocks.2.hook_mlp_out');
  });

  it('agrees with the lens rows the steering clicks use: the row of a hook names it as the hook does', () => {
    for (let row = 0; row <= 5; row++) {
      expect(hookShort(hookOfLensRow(row))).toBe(residShort(row));
      expect(residShort(lensRowOf(hookOfLensRow(row), 5))).toBe(residShort(row));
    }
  });

  it('the decision-point report\'s figure writes its layer ticks and tooltips with it', () => {
    const panel = { title: 'Visible', yLabel: 'Δ', curve: [0.1, 0.5, 1.2, 2, 2.5, 3], reference: { y: 1, label: 'threshold 1' }, mark: { x: 2, label: `visible from ${residShort(2)}` }, testId: 'p' };
    const step = { title: 'Changeable', yLabel: 'outcome', curve: [], reference: { y: 0, label: 'sign change' }, mark: { x: null, label: '—' }, empty: 'Not computed.', testId: 's' };
    const html = renderToStaticMarkup(createElement(ReportFigure, { layerPanels: [panel], stepPanel: step, nLayers: 5, testId: 'f' }));
    for (const name of ['embed', 'L0', 'L1', 'L2', 'L3', 'L4']) expect(html).toContain(`>${name}</text>`);
    expect(html).toContain('<title>L1: 1.2</title>');
    expect(html).not.toMatch(/\brow \d/);
  });
});
