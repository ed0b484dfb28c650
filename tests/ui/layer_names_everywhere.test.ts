// @vitest-environment happy-dom
/**
 * One name per layer (issue 29 item 6, docs/guide.md "Layers have one name in every view, readout,
 * axis and export"): the residual row r is "embed" or "L{r−1}" and block l is "L{l}"
 * (app/lib/layer_names.ts). Checked three ways: (1) no view, component or export in app/ and no
 * deck slide words a layer any other way ("0 = embeddings", "row l", "layers 1–4", "after block
 * l − 1", a bare "layer" axis numbered from 0); (2) the Batch table shows lens_visible_layer as a
 * layer name, not a row number; (3) the Probes view's rendered text and the branch alternative
 * chart's axis ticks read embed, L0, ….
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));

const { useStore } = await import('../../app/store');
const { BatchView } = await import('../../app/views/BatchView');
const { ProbeView } = await import('../../app/views/ProbeView');
const { LineChart } = await import('../../app/components/LineChart');
const dom = domPerTest(useStore);

const ROOT = path.join(import.meta.dirname, '..', '..');
/** Layer wordings other than layer_names.ts's, each found in a view by the fresh-user trials. */
const OTHER_NAMES: RegExp[] = [
  /0 = embeddings/,
  /\brow l\b/,
  /\blayers? \d+\s*[–-]\s*\d+/,
  /after block l\s*[−-]\s*1/,
  /layer \(0 = /,
];

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? sources(p) : /\.tsx?$/.test(d.name) ? [p] : [];
  });
}

describe('one name per layer', () => {
  it('no view, component, export header or deck slide in app/ and public/ names a layer another way', () => {
    const found: string[] = [];
    const texts = [
      ...sources(path.join(ROOT, 'app')).filter((f) => !f.endsWith('layer_names.ts') && !f.endsWith(path.join('lib', 'hooks.ts'))).map((f) => [f, fs.readFileSync(f, 'utf8')] as const),
      ['deck.json', fs.readFileSync(path.join(ROOT, 'public', 'experiments', 'deck.json'), 'utf8')] as const,
      ['tools/make_deck.ts', fs.readFileSync(path.join(ROOT, 'tools', 'make_deck.ts'), 'utf8')] as const,
    ];
    for (const [file, text] of texts) {
      // comments explain the mapping; only strings a user sees count (JSX text and string literals)
      const code = file.endsWith('.json') ? text : text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
      for (const re of OTHER_NAMES) {
        const m = re.exec(code);
        if (m) found.push(`${path.relative(ROOT, file)}: “${m[0]}”`);
      }
    }
    expect(found).toEqual([]);
  });

  it('the Batch table shows lens_visible_layer as embed / L{r−1}', () => {
    const row = (index: number, layer: number | null) => ({ index, vars: { name: `n${index}` }, prompt: `p${index}`, good: ' she', bad: ' he', nTokens: 4, metrics: { final_margin: 1.5, lens_visible_layer: layer } });
    useStore.setState({ batchRows: [row(0, 0), row(1, 5), row(2, 3)], batchModel: 'stories260K', batchY: 'final_margin' } as never);
    act(() => dom.root.render(createElement(BatchView)));
    const table = dom.host.querySelector('[data-testid="batch-table"]')!;
    const col = [...table.querySelectorAll('th')].findIndex((th) => th.textContent?.startsWith('lens_visible_layer'));
    expect(col).toBeGreaterThanOrEqual(0);
    const cells = [...table.querySelectorAll('tbody tr')].map((tr) => tr.querySelectorAll('td')[col]!.textContent);
    expect(cells).toEqual(['embed', 'L4', 'L2']);
  });

  it('the Probes view words its rows as embed, L0, L1, …', () => {
    act(() => dom.root.render(createElement(ProbeView)));
    const text = dom.host.textContent ?? '';
    for (const re of OTHER_NAMES) expect(text).not.toMatch(re);
    expect(text).toContain('embed');
  });

  it('a residual-row axis formatted with residShort reads embed, L0, … (the branch alternative chart)', async () => {
    const { residShort, RESID_AXIS } = await import('../../app/lib/layer_names');
    act(() => dom.root.render(createElement(LineChart, { series: [{ name: 'a', points: [[0, 1], [1, 2], [2, 3]] }], xLabel: RESID_AXIS, yLabel: 'Δ', xTicks: [0, 1, 2], xTickFormat: residShort, label: 'x', testId: 'lc' } as never)));
    const text = dom.host.textContent ?? '';
    expect(text).toContain('embed');
    expect(text).toContain('L1');
    const branch = fs.readFileSync(path.join(ROOT, 'app', 'views', 'BranchView.tsx'), 'utf8');
    expect(branch).toMatch(/testId="fork-lens"[^\n]*xTickFormat=\{residShort\}/);
  });
});
