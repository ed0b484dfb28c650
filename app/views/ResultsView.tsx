import { useMemo } from 'react';
import { useStore } from '../store';
import { Heatmap } from '../components/Heatmap';
import { ColorLegend } from '../components/ColorLegend';
import { LineChart } from '../components/LineChart';
import { divergingScale, symmetricRange } from '../lib/color_scale';
import { blockShort, residShort, RESID_AXIS, BLOCK_AXIS } from '../lib/layer_names';
import { fixed, signed, visibleToken } from '../lib/format';
import type { ResultsFile } from '../../workers/shared';

type Sections = Required<Pick<ResultsFile, 'lens' | 'patch' | 'sweep' | 'window'>>;

/** A signed grid as a heatmap with its legend (nats, or recovery r), read-only. */
function Grid({ rows, rowLabels, colLabels, rowTitle, title, testId }: { rows: readonly (readonly (number | null)[])[]; rowLabels: string[]; colLabels: string[]; rowTitle: string; title: string; testId: string }) {
  const values = useMemo(() => Float32Array.from(rows.flat(), (v) => (v === null ? NaN : v)), [rows]);
  const scale = useMemo(() => { const m = symmetricRange(values, 'robust').m; return { color: divergingScale(m), domain: [-m, m] as [number, number] }; }, [values]);
  return (
    <div className="figure">
      <Heatmap
        values={values} nRows={rows.length} nCols={colLabels.length} color={(v) => (Number.isFinite(v) ? scale.color(v) : '#d0d7de')}
        rowLabels={rowLabels} colLabels={colLabels} rowTitle={rowTitle} colTitle="token" rowsUpward
        cellWidth={{ min: 18, max: 44 }} cellHeight={18} label={title} testId={testId}
      />
      <ColorLegend color={scale.color} domain={scale.domain} title={title} testId={`${testId}-legend`} />
    </div>
  );
}

function LensSection({ s }: { s: Sections['lens'] }) {
  return (
    <section data-testid="results-lens-section">
      <h3>Logit-lens margins</h3>
      <p className="muted">Δ at every layer and token; final margin at the last token <span className="mono" data-testid="results-final-margin">{signed(s.final_margin.at(-1) ?? NaN, 4)}</span> nats.</p>
      <Grid rows={s.lens_margin} rowLabels={s.lens_margin.map((_, r) => residShort(r))} colLabels={s.tokens.map(visibleToken)} rowTitle={RESID_AXIS} title="margin Δ (nats)" testId="results-lens" />
    </section>
  );
}

function PatchSection({ s }: { s: Sections['patch'] }) {
  return (
    <section data-testid="results-patch-section">
      <h3>Patching grid · {s.hook} · {s.direction}</h3>
      <p className="muted">
        Recovery r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt) · clean “{s.clean}” Δ = {fixed(s.clean_margin, 3)} · corrupt “{s.corrupt}” Δ = {fixed(s.corrupt_margin, 3)}
      </p>
      <Grid rows={s.recovery} rowLabels={s.recovery.map((_, l) => blockShort(l))} colLabels={s.clean_tokens.map(visibleToken)} rowTitle={BLOCK_AXIS} title="recovery r" testId="results-patch" />
    </section>
  );
}

const LAYER_COLOURS = ['#0969da', '#cf222e', '#1a7f37', '#8250df', '#bf8700', '#57606a'];

function SweepSection({ s }: { s: Sections['sweep'] }) {
  const series = s.layers.map((l, i) => ({ name: `L${l}`, color: LAYER_COLOURS[i % LAYER_COLOURS.length], points: s.doses.map((d, j) => [d, s.margin[i][j]] as [number, number]) }));
  return (
    <section data-testid="results-sweep-section">
      <h3>Dose–response</h3>
      <p className="muted">Δ at the last prompt position against the dose at {s.hooks.join(', ')}; unsteered Δ = {fixed(s.unsteered_margin, 3)}.</p>
      <LineChart series={series} xLabel="dose α" yLabel="margin Δ (nats)" zeroLine legend label="dose–response" testId="results-sweep" />
    </section>
  );
}

function WindowSection({ s }: { s: Sections['window'] }) {
  const ponr = s.point_of_no_return;
  return (
    <section data-testid="results-window-section">
      <h3>Intervention window</h3>
      <p className="muted">
        Outcome (mean Δ over N = {s.max_new_tokens} steps) with the interventions on from step k · unsteered {signed(s.unsteered_outcome, 3)} ·
        {' '}point of no return: <b data-testid="results-ponr">{ponr === null ? 'none' : `k = ${ponr}`}</b>
      </p>
      <LineChart
        series={[
          { name: 'steered from k', color: '#0969da', points: s.ks.map((k, i) => [k, s.outcome[i]] as [number, number]) },
          { name: 'unsteered', color: '#57606a', dashed: true, points: [[s.ks[0], s.unsteered_outcome], [s.ks.at(-1)!, s.unsteered_outcome]] },
        ]}
        xLabel="start step k" yLabel="outcome (nats)" zeroLine legend xTicks={s.ks} xMarks={ponr === null ? [] : [{ x: ponr, label: 'point of no return', color: '#cf222e' }]}
        label="intervention window" testId="results-window"
      />
    </section>
  );
}

/** A results file opened with Open results… (docs/results-format.md), drawn read-only with the model and where it ran. */
export function ResultsView() {
  const opened = useStore((s) => s.openedResults);
  const close = useStore((s) => s.setOpenedResults);
  if (!opened) {
    return (
      <section className="view" data-testid="results-view">
        <header className="view-head"><h2>Opened results</h2></header>
        <p className="muted" data-testid="results-empty">No results file is open. Open results… in the experiment bar reads one written by the nnsight script (Export nnsight script) or by <span className="mono">branchpoint results</span>.</p>
      </section>
    );
  }
  const r = opened.results;
  return (
    <section className="view" data-testid="results-view">
      <header className="view-head">
        <h2>Opened results · <span data-testid="results-model">{r.model}</span> · ran on <span data-testid="results-where">{r.where_ran}</span></h2>
        <p className="muted">
          Read-only, from {opened.file}{r.produced_by ? ` (${r.produced_by})` : ''}: {r.experiment.title ? `“${r.experiment.title}” · ` : ''}prompt “{r.experiment.prompt}” · Δ = log p(<b className="good">{visibleToken(r.experiment.good.value)}</b>) − log p(<b className="bad">{visibleToken(r.experiment.bad.value)}</b>).
          {' '}Your experiment is unchanged.{' '}
          <button type="button" className="small" data-testid="results-close" onClick={() => close(null)}>Close results</button>
        </p>
      </header>
      {r.lens && <LensSection s={r.lens} />}
      {r.patch && <PatchSection s={r.patch} />}
      {r.sweep && <SweepSection s={r.sweep} />}
      {r.window && <WindowSection s={r.window} />}
    </section>
  );
}
