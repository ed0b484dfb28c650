import { useMemo } from 'react';
import { interpolateViridis, scaleSequential } from 'd3';
import { useStore } from '../store';
import { SteeredTag } from '../components/SteeredTag';
import { ResultStatus, StaleOverlay, useStaleParts } from '../components/ResultStatus';
import { Heatmap } from '../components/Heatmap';
import { useTokenCellHover } from '../components/useTokenCellHover';
import { ColorLegend } from '../components/ColorLegend';
import { DataTable } from '../components/DataTable';
import { ExportButtons } from '../components/ExportButtons';
import { fixed, positionToken, visibleToken } from '../lib/format';
import { residName, residShort, RESID_AXIS } from '../lib/layer_names';

/** Residual-stream norms ‖h^l_t‖ (layer × token) and massive activations per layer (Sun et al. 2024, arXiv 2402.17762). */
export function ResidualNormsView() {
  const r = useStore((s) => s.result);
  const stale = useStaleParts(r);
  const showTables = useStore((s) => s.showTables);
  const [hover, point] = useTokenCellHover();
  const color = useMemo(() => {
    let max = 0;
    for (const v of r?.analysis.residNorms ?? []) if (Number.isFinite(v)) max = Math.max(max, v);
    return scaleSequential(interpolateViridis).domain([0, max || 1]);
  }, [r]);
  if (!r) return <p className="placeholder">Analyse a prompt to see how the residual stream grows through the layers.</p>;
  const a = r.analysis, L1 = a.nLayers + 1, T = a.ids.length, m = a.massive;
  const outdated = stale.some((p) => p !== 'model');
  const rowLabels = Array.from({ length: L1 }, (_, l) => residShort(l));
  const rows = () => Array.from({ length: L1 }, (_, l) => Array.from(a.residNorms.subarray(l * T, (l + 1) * T)));
  return (
    <section className="view" data-testid="norms-view">
      <header className="view-head">
        <h2>Residual norms<SteeredTag steering={r.steering} testId="norms-steered-tag" /></h2>
        <p className="muted">‖h‖ of the residual stream entering the first block (embed) and after each block (L0, L1, …); massive activations are the largest |h| of each layer.</p>
        <ResultStatus model={r.modelLabel} computedWith={r.computedWith} stale={stale} computedFor={r.prompt} testId="norms-status" />
        <ExportButtons
          name={`norms-${r.modelLabel}`}
          json={() => ({ model: r.modelLabel, prompt: r.prompt, tokens: a.tokens, layers: rowLabels, residNorms: rows(), massive: m })}
          csv={() => [['layer \\ position:token — residual norm ‖h‖', ...a.tokens.map((t, i) => `${i}:${t}`)], ...rows().map((row, l) => [rowLabels[l], ...row])]}
          figure={() => ({
            title: `Residual norms ‖h‖ · ${r.modelLabel}`,
            caption: ['‖h‖ of the residual stream entering the first block (embed) and after each block (L0, L1, …), at each prompt token', `prompt: “${r.prompt}”`],
            panels: [{ kind: 'heatmap', values: a.residNorms, nRows: L1, nCols: T, rowLabels, colLabels: a.tokens.map(visibleToken), rowTitle: RESID_AXIS, colTitle: 'position · token', rowsUpward: true, scale: { color, domain: color.domain() as [number, number], title: '‖h‖' } }],
          })}
        />
      </header>
      <div className="view-body">
        <div className={`figure${outdated ? ' stale' : ''}`}>
          {outdated && <StaleOverlay testId="norms-stale" />}
          <Heatmap
            values={a.residNorms} nRows={L1} nCols={T} color={color}
            rowLabels={rowLabels} colLabels={a.tokens.map(visibleToken)} rowTitle={RESID_AXIS} colTitle="position · token"
            rowsUpward cellWidth={{ min: 12, max: 96 }} cellHeight={34} active={hover} onHover={point}
            label="Residual norm by layer and token" testId="norms-heatmap"
          />
          <ColorLegend color={color} domain={color.domain() as [number, number]} title="‖h‖" testId="norms-legend" />
        </div>
        <aside className="readout" data-testid="norms-readout">
          {hover ? (
            <dl>
              <dt>Layer</dt><dd>{residName(hover.row, a.nLayers)}</dd>
              <dt>Position</dt><dd className="mono">{positionToken(hover.col, a.tokens[hover.col])}</dd>
              <dt>‖h‖</dt><dd className="mono big">{fixed(a.residNorms[hover.row * T + hover.col], 3)}</dd>
            </dl>
          ) : <p className="muted">Point at a cell to read it.</p>}
        </aside>
      </div>
      <div className="table-scroll">
        <table className="data-table" data-testid="massive-table">
          <caption>Massive activations: the largest |h| per layer, where it sits, and its ratio to the median |h|</caption>
          <thead><tr><th scope="col">layer</th><th scope="col">max |h|</th><th scope="col">token</th><th scope="col">dim</th><th scope="col">max / median</th></tr></thead>
          <tbody>
            {rowLabels.map((label, l) => (
              <tr key={l}>
                <th scope="row">{label}</th>
                <td className="num">{fixed(m.value[l], 3)}</td>
                <td className="mono">{positionToken(m.token[l], a.tokens[m.token[l]] ?? '')}</td>
                <td className="num">{m.dim[l]}</td>
                <td className="num">{fixed(m.ratio[l], 1)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {showTables && (
        <DataTable caption="Residual norm ‖h‖ by layer and position" rowHeader="layer" rowLabels={rowLabels} colLabels={a.tokens.map((t, i) => `${i} ${visibleToken(t)}`)}
          cell={(l, t) => fixed(a.residNorms[l * T + t], 4)} cellTestId={(l, t) => `norm-cell-${l}-${t}`} testId="norms-table" />
      )}
    </section>
  );
}
