import { useMemo, useRef, useState } from 'react';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { schemeTableau10 } from 'd3';
import { useStore } from '../store';
import { runStudy } from '../actions/study';
import { useStudy } from '../components/useStudy';
import { BarChart } from '../components/BarChart';
import { ColorLegend } from '../components/ColorLegend';
import { ExportButtons } from '../components/ExportButtons';
import { RouteDivergencePanel } from './RouteDivergencePanel';
import { Heatmap, type Cell } from '../components/Heatmap';
import { ScaleControl, useHeatmapColour } from '../components/ScaleControl';
import { useExperimentFields } from '../components/useExperimentRequest';
import { experimentRequest, type ExperimentFields } from '../lib/experiment_request';
import { fixed, signed, visibleToken } from '../lib/format';
import { waitingFor } from '../lib/job_rules';
import type { InterventionDraft } from '../store/steering';
import type { StudyRequest, StudyResult } from '../../workers/protocol';
import { decisionPointText } from '../lib/decision_point_text';
import { prefixOf } from '../lib/decision_point_tokens';
import { useDecisionPointTokens } from '../components/useDecisionPointTokens';

type Route = StudyResult<'route'>;
type Sweep = StudyResult<'routeSweep'>;
type BanAt = 'all' | 'decision';
type Ban = { layer: number; experts: number[] };

/** Whether the loaded model has routers (its hook list names a router at some layer). */
export function hasRouters(hookNames: readonly string[]): boolean {
  return hookNames.some((h) => h.endsWith('.mlp.hook_router_logits'));
}

/** An expert's colour in the routing map and its legend (categorical). */
const expertColour = (e: number): string => schemeTableau10[e % 10];

/** The router's softmax over the experts at one (sparse layer, token) from its logits [n_experts]. */
function softmax(logits: ArrayLike<number>): number[] {
  const m = Math.max(...Array.from(logits));
  const z = Array.from(logits, (l) => Math.exp(l - m));
  const s = z.reduce((a, b) => a + b, 0);
  return z.map((v) => v / s);
}

/** The ban_experts drafts of one set of bans, at every position or at the decision point (lib/decision_point_text.ts). */
function banDrafts(bans: readonly Ban[], positions: InterventionDraft['positions']): Omit<InterventionDraft, 'id'>[] {
  return bans.map((b) => ({
    enabled: true, hook: `blocks.${b.layer}.mlp.hook_router_logits`, type: 'ban_experts', dose: 0, rotateBy: 'theta', mode: 'zero', vectorId: null,
    source: '', head: null, positions, steps: null, experts: [...b.experts],
  }));
}

type SweepSettings = { masks: number; maskSize: number; seed: number; target: 'good' | 'bad' };

/** The requests the view sends, from the experiment (prompt, futures, enabled interventions) and its settings; or why it cannot. */
function buildRequests(s: ExperimentFields, banAt: BanAt, setText: string, sweep: SweepSettings, promptB: string) {
  try {
    const base = experimentRequest(s);
    const set = setText.split('\n').map((l) => l.trim()).filter(Boolean);
    const route: StudyRequest<'route'> = { ...base, banAt, ...(set.length ? { set } : {}), ...(promptB.trim() ? { promptB } : {}) };
    const routeSweep: StudyRequest<'routeSweep'> = { ...base, ...sweep };
    return { route, routeSweep, problem: null };
  } catch (e) {
    return { route: undefined, routeSweep: undefined, problem: (e as Error).message };
  }
}

/** buildRequests over the store as it is rendered. */
function useRequests(banAt: BanAt, setText: string, sweep: SweepSettings, promptB: string) {
  const s = useExperimentFields();
  return useMemo(() => buildRequests(s, banAt, setText, sweep, promptB), [s, banAt, setText, sweep, promptB]);
}

/** The router's distribution at the (sparse layer, token) under the pointer: one bar per expert, the chosen ones in their colour. */
function RouterReadout({ r, cell }: { r: Route; cell: Cell | null }) {
  if (!cell) return <aside className="readout" data-testid="routes-readout"><p className="muted">Point at a cell to read the router’s distribution over the experts there.</p></aside>;
  const lr = r.layers[cell.row], E = r.nExperts, k = r.topK, t = cell.col;
  const p = softmax(lr.routerLogits.subarray(t * E, (t + 1) * E));
  const chosen = Array.from(lr.expertIndices.subarray(t * k, (t + 1) * k));
  const w = Array.from(lr.expertWeights.subarray(t * k, (t + 1) * k));
  return (
    <aside className="readout" data-testid="routes-readout" data-layer={lr.layer} data-position={t}>
      <dl>
        <dt>Router</dt><dd className="mono">blocks.{lr.layer}.mlp</dd>
        <dt>Token</dt><dd className="mono">{t} · {visibleToken(r.tokens[t])}</dd>
        <dt>Chosen</dt><dd className="mono" data-testid="routes-readout-chosen">{chosen.map((e, j) => `e${e} ${fixed(w[j], 3)}`).join(', ')}</dd>
      </dl>
      <table className="router-dist" data-testid="routes-readout-dist">
        <tbody>
          {p.map((v, e) => (
            <tr key={e}>
              <td className="mono">e{e}</td>
              <td style={{ width: 140 }}><div style={{ width: `${Math.max(1, v * 100)}%`, height: 10, background: chosen.includes(e) ? expertColour(e) : '#d0d7de' }} /></td>
              <td className="mono">{fixed(v, 3)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="hint">softmax of the router logits (before any renormalisation of the top-{k})</p>
    </aside>
  );
}

/** Counts of the masks' rises in 8 equal bins from the smallest to the largest. */
function histogram(rise: ArrayLike<number>): { labels: string[]; counts: number[] } {
  const xs = Array.from(rise), lo = Math.min(...xs), hi = Math.max(...xs), n = 8, w = (hi - lo) / n || 1;
  const counts = new Array<number>(n).fill(0);
  for (const x of xs) counts[Math.min(n - 1, Math.floor((x - lo) / w))]++;
  return { labels: counts.map((_, i) => signed(lo + (i + 0.5) * w, 2)), counts };
}

/** A mask in words: "L0: e1, e3 · L2: e0". */
const maskText = (m: readonly Ban[]) => m.map((x) => `L${x.layer}: ${x.experts.map((e) => `e${e}`).join(', ')}`).join(' · ');

/**
 * Expert routes of a mixture-of-experts model (issue 26): the routing map (sparse layer × token:
 * the chosen experts and their weights; hover for the router's distribution), expert paths (each
 * token's top-1 expert per sparse layer, grouped, over the prompt and a prompt set), the route
 * margin grid (layer × expert: Δ_banned − Δ with that expert banned at every position or at the
 * decision point; a click adds the ban to the interventions and runs again) and the router-mask
 * sweep (RoSais, arXiv 2602.08621: N seeded masks of m routers, the target future's log-prob rise;
 * one click applies the worst mask). Runs with the enabled interventions.
 */
export function RoutesView() {
  const info = useStore((s) => s.info);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const good = useStore((s) => s.good.value);
  const bad = useStore((s) => s.bad.value);
  const interventions = useStore((s) => s.interventions);
  /** The next run's decision point (the futures' shared prefix counted), named in the ban-at option. */
  const dp = useDecisionPointTokens();
  const [banAt, setBanAt] = useState<BanAt>('all');
  const [setText, setSetText] = useState('');
  const [promptB, setPromptB] = useState('');
  const [sweepSet, setSweepSet] = useState<SweepSettings>({ masks: 20, maskSize: 1, seed: 0, target: 'bad' });
  const [hover, setHover] = useState<Cell | null>(null);
  const [applied, setApplied] = useState<{ text: string; before: number; predicted: number | null } | null>(null);
  const req = useRequests(banAt, setText, sweepSet, promptB);
  const route = useStudy('route', req.route);
  const sweep = useStudy('routeSweep', req.routeSweep);
  const r: Route | undefined = route.run?.result;
  const sw: Sweep | undefined = sweep.run?.result;
  const sweepSvg = useRef<SVGSVGElement | null>(null);
  const grid = useMemo(() => r?.routeMargin ?? new Float64Array(), [r]);
  const scale = useHeatmapColour(grid, 'Δ change');
  const top1 = useMemo(() => {
    if (!r) return new Float32Array();
    const T = r.tokens.length, out = new Float32Array(r.layers.length * T);
    r.layers.forEach((lr, i) => { for (let t = 0; t < T; t++) out[i * T + t] = lr.expertIndices[t * r.topK]; });
    return out;
  }, [r]);
  if (info && !hasRouters(info.hookNames)) {
    return <section className="view" data-testid="routes-view"><h2>Expert routes</h2><p className="placeholder">{info.modelType} has no routers: this view reads mixture-of-experts models (Mixtral, Qwen2-MoE, OLMoE).</p></section>;
  }
  // built from the store at the click, so a ban just added is in the request
  const now = () => buildRequests(useStore.getState(), banAt, setText, sweepSet, promptB);
  const runRoutes = async () => {
    const q = now().route;
    if (q) await runStudy('route', q, { label: 'Expert routes', what: 'Could not compute the expert routes' });
  };
  const runSweep = async () => {
    const q = now().routeSweep;
    if (q) await runStudy('routeSweep', q, { label: 'Router-mask sweep', what: 'Could not run the router-mask sweep', total: sweepSet.masks });
  };
  /** Adds bans to the interventions and runs the routes again (the view applies the enabled interventions), so the margin change shows. */
  const applyBans = async (bans: Ban[], positions: InterventionDraft['positions'], text: string, predicted: number | null) => {
    if (!r || r.margin === undefined) return;
    const before = r.margin;
    for (const d of banDrafts(bans, positions)) useStore.getState().addIntervention(d);
    setApplied({ text, before, predicted });
  };
  const T = r?.tokens.length ?? 0;
  const margin = r?.margin;
  // the grid cells the enabled bans act on now (outlined)
  const bannedCells: Cell[] = r ? interventions.filter((d) => d.enabled && d.type === 'ban_experts').flatMap((d) => {
    const m = /^blocks\.(\d+)\.mlp\.hook_router_logits$/.exec(d.hook);
    return m ? (d.experts ?? []).map((e) => ({ row: Number(m[1]), col: e })) : [];
  }) : [];
  const wasBefore = applied && route.run && !route.stale ? applied : null;
  return (
    <section className="view" data-testid="routes-view">
      <header className="view-head">
        <h2>Expert routes</h2>
        <p className="muted">
          Where a sparse model commits through its routers: each sparse layer’s router picks the top-{r?.topK ?? 'k'} experts of every token.
          The route margin grid bans one expert (its router logit set to −∞) and measures the margin Δ = log p(<b className="good">{visibleToken(good)}</b>) − log p(<b className="bad">{visibleToken(bad)}</b>) again;
          the sweep masks m random routers at once (RoSais, arXiv 2602.08621).
        </p>
      </header>
      {r?.warnings?.map((w) => <p key={w} className="note-warn" role="status" data-testid="routes-warning">{w}</p>)}
      {r?.good && r.bad && <SharedPrefixNote shared={r.sharedPrefix} testId="routes-shared-prefix" />}
      <form className="row settings" onSubmit={(e) => { e.preventDefault(); if (!job) void runRoutes(); }}>
        <label>Ban each expert at
          <select data-testid="routes-ban-at" value={banAt} onChange={(e) => setBanAt(e.target.value as BanAt)}>
            <option value="all">every position</option>
            <option value="decision">{decisionPointText(prefixOf(dp))}</option>
          </select>
        </label>
        <label className="stack">Prompt set for expert paths (one per line, optional)
          <textarea rows={2} cols={36} data-testid="routes-set" value={setText} onChange={(e) => setSetText(e.target.value)} />
        </label>
        <label className="stack">Prompt B for routing divergence (same token count, optional)
          <input type="text" size={28} data-testid="routes-prompt-b" value={promptB} onChange={(e) => setPromptB(e.target.value)} />
        </label>
        <button type="submit" className="primary" data-testid="run-routes" title={waitingFor(job)} disabled={!!job || !ready || !req.route}>Run routes</button>
      </form>
      {req.problem && <p className="warn" data-testid="routes-problem">{req.problem}</p>}
      {route.stale && r && <p className="warn" data-testid="routes-stale">These routes are for an earlier request or model: run again to update them.</p>}
      {wasBefore && margin !== undefined && (
        <p className="note-ok" role="status" data-testid="routes-applied" data-change={margin - wasBefore.before} data-predicted={wasBefore.predicted ?? ''}>
          {wasBefore.text}: Δ {signed(wasBefore.before, 4)} → <span className="mono" data-testid="routes-applied-margin">{signed(margin, 4)}</span> (change {signed(margin - wasBefore.before, 4)}{wasBefore.predicted !== null ? `; the cell said ${signed(wasBefore.predicted, 4)}` : ''}).
        </p>
      )}
      {applied && !wasBefore && <p className="note" data-testid="routes-applied-pending">{applied.text}: added to the interventions. Run routes to see the margin under it.</p>}
      {r ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="routes-caption">
              {r.layers.length} sparse layers of {r.nLayers} · {r.nExperts} experts, top-{r.topK}
              {margin !== undefined && <> · Δ = <span className="mono" data-testid="routes-margin">{signed(margin, 4)}</span> nats</>}
            </p>
            <ExportButtons
              name="routes"
              json={() => ({ ...r, layers: r.layers.map((x) => ({ layer: x.layer, routerLogits: Array.from(x.routerLogits), expertIndices: Array.from(x.expertIndices), expertWeights: Array.from(x.expertWeights) })), routeMargin: r.routeMargin ? Array.from(r.routeMargin) : undefined, divergence: r.divergence?.map((x) => ({ layer: x.layer, jaccard: Array.from(x.jaccard), js: Array.from(x.js) })) })}
              csv={() => [['layer', 'position', 'token', 'experts (descending weight)', 'weights'], ...r.layers.flatMap((x) => r.tokens.map((t, i) => [x.layer, i, t, Array.from(x.expertIndices.subarray(i * r.topK, (i + 1) * r.topK)).join(' '), Array.from(x.expertWeights.subarray(i * r.topK, (i + 1) * r.topK), (v) => fixed(v, 6)).join(' ')]))]}
              figure={r.routeMargin ? () => ({
                title: 'Route margin grid',
                caption: [`Δ_banned − Δ per layer × expert, banned at ${r.banAt === 'decision' ? decisionPointText(r.sharedPrefix) : 'every position'}; Δ = log p(“${good}”) − log p(“${bad}”) = ${signed(r.margin!, 4)}`],
                panels: [{
                  kind: 'heatmap', values: grid, nRows: r.nLayers, nCols: r.nExperts, rowLabels: Array.from({ length: r.nLayers }, (_, l) => `L${l}`), colLabels: Array.from({ length: r.nExperts }, (_, e) => `e${e}`),
                  rowTitle: 'layer', colTitle: 'expert banned', rowsUpward: true, annotate: (row, col) => (Number.isFinite(grid[row * r.nExperts + col]) ? signed(grid[row * r.nExperts + col], 2) : null),
                  scale: { color: scale.color, domain: scale.domain, title: 'margin change (nats)', lowNote: 'toward bad', highNote: 'toward good' },
                }],
              }) : undefined}
            />
          </div>
          <div className="view-body">
            <div className="figure">
              <h3>Routing map (sparse layer × token)</h3>
              <Heatmap
                values={top1} nRows={r.layers.length} nCols={T} color={(v) => expertColour(v)}
                rowLabels={r.layers.map((x) => `L${x.layer}`)} colLabels={r.tokens.map(visibleToken)} rowTitle="sparse layer" colTitle="position · token"
                rowsUpward pinLastColumn cellWidth={{ min: 14, max: 64 }} cellHeight={40}
                annotate={(c) => { const lr = r.layers[c.row]; return Array.from({ length: r.topK }, (_, j) => `e${lr.expertIndices[c.col * r.topK + j]} ${fixed(lr.expertWeights[c.col * r.topK + j], 2)}`).join('\n'); }}
                active={hover} onHover={(c) => { if (c) setHover(c); }}
                label="chosen experts per sparse layer and token" testId="routes-map"
              />
              <p className="legend-row" data-testid="routes-map-legend">
                colour = the top-1 expert: {Array.from({ length: r.nExperts }, (_, e) => <span key={e} className="mono" style={{ marginRight: 8 }}><span style={{ display: 'inline-block', width: 10, height: 10, background: expertColour(e), marginRight: 3 }} />e{e}</span>)}
              </p>
            </div>
            <RouterReadout r={r} cell={hover} />
          </div>
          {r.routeMargin && (
            <div className="figure" data-testid="routes-margin-panel">
              <h3>Route margin grid (layer × expert banned {r.banAt === 'decision' ? `at ${decisionPointText(r.sharedPrefix)}` : 'at every position'})</h3>
              <ScaleControl what="Δ change" testId="routes-scale" />
              <Heatmap
                values={grid} nRows={r.nLayers} nCols={r.nExperts} color={scale.color}
                rowLabels={Array.from({ length: r.nLayers }, (_, l) => `L${l}${r.layers.some((x) => x.layer === l) ? '' : ' (dense)'}`)} colLabels={Array.from({ length: r.nExperts }, (_, e) => `e${e}`)} colIndex={null}
                rowTitle="layer" colTitle="expert banned" rowsUpward cellWidth={{ min: 36, max: 64 }} cellHeight={32}
                annotate={(c) => { const v = grid[c.row * r.nExperts + c.col]; return Number.isFinite(v) ? signed(v, 2) : null; }}
                onSelect={job ? undefined : (c) => {
                  const v = grid[c.row * r.nExperts + c.col];
                  if (!Number.isFinite(v)) return;
                  void applyBans([{ layer: c.row, experts: [c.col] }], r.banAt === 'decision' ? [T - 1] : 'all', `Banned e${c.col} at L${c.row} (${r.banAt === 'decision' ? `position ${T - 1}` : 'every position'})`, v).then(runRoutes);
                }}
                markedCells={bannedCells}
                label="margin change per layer and banned expert" testId="routes-margin-grid"
              />
              <ColorLegend color={scale.color} domain={scale.domain} title="Δ_banned − Δ (nats)" lowNote="← toward the bad future" highNote="toward the good future →" testId="routes-legend" />
              <p className="hint">Click a cell to add that ban to the interventions and run again: the margin above changes by what the cell said. 0 = no banned position chose that expert (nothing changes); dashed orange = banned now by an enabled intervention. Grey rows are dense layers.</p>
            </div>
          )}
          <RouteDivergencePanel r={r} />
          <div className="figure" data-testid="routes-paths">
            <h3>Expert paths (top-1 expert per sparse layer, {r.pathPrompts} prompt{r.pathPrompts === 1 ? '' : 's'})</h3>
            <table className="data" data-testid="routes-paths-table">
              <thead><tr><th>path ({r.layers.map((x) => `L${x.layer}`).join(' → ')})</th><th>tokens</th><th>examples</th></tr></thead>
              <tbody>
                {r.paths.slice(0, 12).map((p) => (
                  <tr key={p.path.join(',')}>
                    <td className="mono">{p.path.map((e) => `e${e}`).join(' → ')}</td>
                    <td className="mono">{p.count}</td>
                    <td className="mono">{p.examples.map(visibleToken).join(' ')}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {r.paths.length > 12 && <p className="muted">{r.paths.length - 12} rarer paths not shown (in the JSON export).</p>}
            {r.pathPrompts > 1 && <p className="hint">The set’s prompts run without the interventions (those are placed on the main prompt’s positions).</p>}
          </div>
        </>
      ) : <p className="placeholder">Run routes to see which experts each token chooses at each sparse layer and, with the experiment’s futures, how much the margin depends on each expert.</p>}
      <form className="row settings" data-testid="routes-sweep-form" onSubmit={(e) => { e.preventDefault(); if (!job) void runSweep(); }}>
        <strong>Router-mask sweep</strong>
        <label>masks N <input type="number" min={1} max={1000} className="short" data-testid="routes-sweep-masks" value={sweepSet.masks} onChange={(e) => setSweepSet({ ...sweepSet, masks: Math.max(1, Math.floor(Number(e.target.value) || 1)) })} /></label>
        <label>routers per mask m <input type="number" min={1} max={r?.layers.length ?? 64} className="short" data-testid="routes-sweep-size" value={sweepSet.maskSize} onChange={(e) => setSweepSet({ ...sweepSet, maskSize: Math.max(1, Math.floor(Number(e.target.value) || 1)) })} /></label>
        <label>seed <input type="number" min={0} className="short" data-testid="routes-sweep-seed" value={sweepSet.seed} onChange={(e) => setSweepSet({ ...sweepSet, seed: Math.max(0, Math.floor(Number(e.target.value) || 0)) })} /></label>
        <label>target
          <select data-testid="routes-sweep-target" value={sweepSet.target} onChange={(e) => setSweepSet({ ...sweepSet, target: e.target.value as 'good' | 'bad' })}>
            <option value="bad">the bad future</option>
            <option value="good">the good future</option>
          </select>
        </label>
        <button type="submit" className="primary" data-testid="run-routes-sweep" title={waitingFor(job)} disabled={!!job || !ready || !req.routeSweep}>Run sweep</button>
      </form>
      {sw && (
        <div className="figure" data-testid="routes-sweep">
          {sweep.stale && <p className="warn">This sweep is for an earlier request or model: run it again to update it.</p>}
          <div className="view-head">
            <p className="muted" data-testid="routes-sweep-caption">
              {sw.masks.length} masks of {sw.masks[0]?.length ?? 0} router{(sw.masks[0]?.length ?? 0) === 1 ? '' : 's'} · rise of log p({sw.target} “{visibleToken(sw.target === 'bad' ? bad : good)}”) from {fixed(sw.logProb, 3)} ·
              median {signed(sw.quantiles[3], 3)}, 90 % {signed(sw.quantiles[5], 3)}, max {signed(sw.quantiles[6], 3)} nats
            </p>
            <ExportButtons
              name="route-sweep"
              json={() => ({ ...sw, rise: Array.from(sw.rise), marginChange: Array.from(sw.marginChange) })}
              csv={() => [['mask', 'routers (layer: banned experts)', `rise of log p(${sw.target}) (nats)`, 'margin change (nats)'], ...sw.masks.map((m, i) => [i, maskText(m), sw.rise[i], sw.marginChange[i]])]}
              figure={() => sweepSvg.current && ({ title: 'Router-mask sweep', caption: [`rise of log p(${sw.target}) under ${sw.masks.length} random masks of ${sw.masks[0]?.length} routers (seed ${sweepSet.seed})`, `worst: ${maskText(sw.masks[sw.worst])} (${signed(sw.rise[sw.worst], 3)} nats)`], panels: [{ kind: 'svg' as const, element: sweepSvg.current }] })}
            />
          </div>
          {(() => { const h = histogram(sw.rise); return <BarChart labels={h.labels} values={h.counts} domain={[0, Math.max(...h.counts)]} xLabel={`rise of log p(${sw.target}) (nats), bin centres`} yLabel="masks" format={(v) => String(v)} width={560} svgRef={sweepSvg} label="distribution of the rise over the masks" testId="routes-sweep-hist" />; })()}
          <p data-testid="routes-sweep-worst">
            Worst mask (#{sw.worst}): <span className="mono">{maskText(sw.masks[sw.worst])}</span> — rise {signed(sw.rise[sw.worst], 3)} nats, margin change {signed(sw.marginChange[sw.worst], 3)}{' '}
            <button type="button" className="small" data-testid="routes-apply-worst" disabled={!!job || !r || r.margin === undefined} title={r?.margin === undefined ? 'Run routes first (the margin is shown there)' : undefined}
              onClick={() => void applyBans(sw.masks[sw.worst], 'all', `Applied the worst mask (${maskText(sw.masks[sw.worst])})`, sw.marginChange[sw.worst]).then(runRoutes)}>Apply worst mask</button>
          </p>
        </div>
      )}
    </section>
  );
}
