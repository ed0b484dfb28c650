import { useEffect, useMemo, useRef, useState } from 'react';
import { schemeTableau10 } from 'd3';
import { useStore } from '../store';
import { findForkPoints, forkPointsWork, forkTo, pickForkSite, restoreTree, startTree } from '../actions/branching';
import { forkSeconds, tokensWord } from '../lib/fork_estimate';
import { duration } from '../lib/time_left';
import { BranchTreeChart, nodeColourScale, nodeValue } from '../components/BranchTreeChart';
import { ColorLegend } from '../components/ColorLegend';
import { ExportButtons } from '../components/ExportButtons';
import { FilePickButton } from '../components/FilePickButton';
import { LineChart, type Series } from '../components/LineChart';
import { ResultStatus } from '../components/ResultStatus';
import { fixed, positionLabel, signed, quotedToken, visibleToken } from '../lib/format';
import { pathOf, type TreePath } from '../../workers/shared';
import type { BranchTree, ForkPoint, ForkPointsResult } from '../../workers/protocol';
import type { NodeColour } from '../store/branching';
import { waitingFor } from '../lib/job_rules';
import { residShort, RESID_AXIS } from '../lib/layer_names';
import { ForkFlow } from './ForkFlow';

const COLOURS: { value: NodeColour; title: string }[] = [
  { value: 'final_margin', title: 'final Δ of the futures' },
  { value: 'mean_margin', title: 'mean Δ of the futures' },
  { value: 'mean_entropy', title: 'mean entropy (nats)' },
];

/** Longest name of a future shown beside the tree (a tool call's name(arguments) runs long): the rest is cut with "…", the caption's title holds it whole. */
const FUTURE_CHARS = 32;

/** A tree's future name (BranchTree.good) as the caption and legend show it: visible spaces, at most FUTURE_CHARS characters. */
function futureShort(name: string): string {
  const v = visibleToken(name);
  return v.length > FUTURE_CHARS ? `${v.slice(0, FUTURE_CHARS - 1)}…` : v;
}

/** Where two paths first differ (their fork), or the shorter length when one continues the other. */
function forkOf(a: TreePath, b: TreePath): number {
  let t = 0;
  while (t < a.ids.length && t < b.ids.length && a.ids[t] === b.ids[t]) t++;
  return t;
}

/** Trunk and fork settings, Generate, and opening an exported tree. */
function TreeForm() {
  const draw = useStore((s) => s.forkDraw);
  const setDraw = useStore((s) => s.setForkDraw);
  const maxNew = useStore((s) => s.generation.maxNewTokens);
  const setGeneration = useStore((s) => s.setGeneration);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const num = (v: string, f: (n: number) => void) => { const n = Number(v); if (Number.isFinite(n)) f(n); };
  return (
    <form className="row settings" onSubmit={(e) => { e.preventDefault(); if (!job && ready) void startTree(); }}>
      <label>Max new tokens
        <input type="number" className="short" data-testid="branch-max-new" min={1} max={512} value={maxNew} onChange={(e) => num(e.target.value, (n) => setGeneration({ maxNewTokens: Math.max(1, Math.round(n)) }))} />
      </label>
      <label title="0 = greedy; above 0, seeded sampling">Temperature
        <input type="number" className="short" data-testid="branch-temperature" min={0} max={5} step={0.1} value={draw.temperature} onChange={(e) => num(e.target.value, (n) => setDraw({ temperature: Math.max(0, n) }))} />
      </label>
      <label>Seed
        <input type="number" className="short" data-testid="branch-seed" min={0} value={draw.seed} onChange={(e) => num(e.target.value, (n) => setDraw({ seed: Math.max(0, Math.round(n)) }))} />
      </label>
      <label className="toggle" title="The enabled interventions act on the trunk, or on a fork's own tokens (from the fork on)">
        <input type="checkbox" data-testid="branch-steered" checked={draw.steered} onChange={(e) => setDraw({ steered: e.target.checked })} />
        with the interventions
      </label>
      <span className="actions">
        <button type="submit" className="primary" data-testid="branch-start" title={waitingFor(job)} disabled={!!job || !ready}>Generate trunk</button>
        <FilePickButton label="Open tree…" accept=".json,application/json" testId="branch-restore" disabled={!!job || !ready} onFile={(f) => void restoreTree(f)} />
      </span>
    </form>
  );
}

/** The selected branch's tokens (prompt, then new ones); click one to fork there. Near ties are marked. */
function PathTokens({ tree, path, node }: { tree: BranchTree; path: TreePath; node: number }) {
  const site = useStore((s) => s.forkSite);
  const gapMax = useStore((s) => s.gapThreshold);
  const forks = useStore((s) => s.forks);
  const T = tree.promptIds.length;
  const score = new Map((forks && forks.node === node ? forks.points : []).map((p) => [p.position, p.score]));
  return (
    <ol className="token-strip selectable path-tokens" data-testid="path-tokens" aria-label="tokens of the selected branch">
      {path.ids.map((id, t) => {
        const top = path.top[t];
        const gap = top && top.logProbs.length > 1 ? Math.exp(top.logProbs[0]) - Math.exp(top.logProbs[1]) : NaN;
        const near = gap <= gapMax;
        const cls = [t < T ? 'prompt' : path.margins[t] >= 0 ? 'pos' : 'neg', near ? 'near-tie' : '', site?.position === t ? 'selected' : '', t === 0 ? 'fixed' : ''].filter(Boolean).join(' ');
        const sc = score.get(t);
        return (
          <li key={t} className={cls} data-testid="path-token" data-position={t} data-id={id} data-near-tie={near ? 'true' : undefined}
            title={`position ${t}${t >= T ? ` · new token ${t - T}` : ' · prompt'} · id ${id}${Number.isFinite(path.logProbs[t]) ? ` · p ${fixed(Math.exp(path.logProbs[t]), 3)}` : ''}${Number.isFinite(gap) ? ` · top-1 − top-2 gap ${fixed(gap, 3)}` : ''}${sc !== undefined && Number.isFinite(sc) ? ` · fork score ${fixed(sc, 3)} nats` : ''}${t > 0 ? ' · click to fork here' : ''}`}
            tabIndex={t > 0 ? 0 : undefined}
            onClick={t > 0 && top ? () => void pickForkSite(node, t, top.ids.filter((x) => x !== id)) : undefined}
            onKeyDown={t > 0 && top ? (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); void pickForkSite(node, t, top.ids.filter((x) => x !== id)); } } : undefined}>
            <span className="idx">{t}</span>
            <span className="txt">{visibleToken(path.tokens[t])}</span>
            {sc !== undefined && Number.isFinite(sc) && <span className="fork-score" style={{ width: `${Math.min(100, sc * 30)}%` }} />}
          </li>
        );
      })}
    </ol>
  );
}

/** The alternatives at the picked position, the lens margin chosen − alternative by layer, Fork buttons, and the decision's flow back to the prompt. */
function ForkPanel({ tree, path }: { tree: BranchTree; path: TreePath }) {
  const site = useStore((s) => s.forkSite);
  const lens = useStore((s) => s.forkLens);
  const job = useStore((s) => s.job);
  const nPrompt = useStore((s) => s.tree?.promptIds.length ?? 0);
  const [hover, setHover] = useState<number | null>(null);
  if (!site) return <p className="hint">Click a token of the branch to see what the model could have written there instead, and fork.</p>;
  const top = path.top[site.position];
  if (!top) return null;
  const chosen = path.ids[site.position];
  const alts = top.ids.map((id, i) => ({ id, token: top.tokens[i], p: Math.exp(top.logProbs[i]) }));
  const shown = hover ?? lens?.alternatives[0] ?? null;
  const ai = lens && shown !== null ? lens.alternatives.indexOf(shown) : -1;
  const series: Series[] = lens && ai >= 0 ? [{ name: `Δ ${quotedToken(path.tokens[site.position])} − ${quotedToken(alts.find((a) => a.id === shown)?.token ?? '')}`, color: '#8250df', points: lens.margins[ai].map((v, l) => [l, v] as [number, number]) }] : [];
  return (
    <div className="fork-panel" data-testid="fork-panel" data-position={site.position}>
      <h3>Fork at {positionLabel(site.position, nPrompt)} <span className="muted">(chosen: {quotedToken(path.tokens[site.position])})</span></h3>
      <div className="row">
        <table className="data-table alternatives" data-testid="alternatives">
          <thead><tr><th>#</th><th>token</th><th>p</th><th /></tr></thead>
          <tbody>
            {alts.map((a, i) => (
              <tr key={a.id} data-testid={`alternative-${i}`} data-id={a.id} onMouseEnter={() => a.id !== chosen && setHover(a.id)} className={a.id === chosen ? 'chosen' : undefined}>
                <td>{i + 1}</td>
                <td className="mono">{visibleToken(a.token)}</td>
                <td className="mono">{fixed(a.p, 4)}</td>
                <td>{a.id === chosen ? <span className="muted">chosen</span> : <button type="button" className="small" data-testid={`fork-${i}`} title={waitingFor(job)} disabled={!!job} onClick={() => void forkTo(a.id)}>Fork</button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <div className="figure">
          {lens ? (
            <LineChart series={series} xLabel={RESID_AXIS} yLabel="lens Δ chosen − alt (nats)" zeroLine width={420} height={200}
              label="Logit-lens margin between the chosen token and the alternative, by layer" testId="fork-lens" xTicks={lens.margins[0].map((_, l) => l)} xTickFormat={residShort} />
          ) : <p className="hint">Computing the logit lens at this position…</p>}
          <p className="hint">Hover an alternative for its lens margin by layer: where the model's preference for the chosen token forms.</p>
        </div>
      </div>
      <ForkFlow tree={tree} path={path} position={site.position} />
    </div>
  );
}

/** Two branches side by side: texts and margin curves aligned at their fork (x = position − fork). */
function Compare({ tree }: { tree: BranchTree }) {
  const compare = useStore((s) => s.compare);
  const svg = useRef<SVGSVGElement | null>(null);
  if (compare.length < 2) return <p className="hint">Shift-click two branches in the tree to compare their texts and margin curves.</p>;
  const [a, b] = compare.map((id) => pathOf(tree, id));
  const fork = forkOf(a, b);
  const T = tree.promptIds.length;
  const from = Math.max(T, fork - 3);
  const series: Series[] = [a, b].map((p, i) => ({ name: `${'AB'[i]}: node ${compare[i]}`, color: schemeTableau10[i], points: p.margins.slice(from).map((m, j) => [from + j - fork, m] as [number, number]) }));
  const text = (p: TreePath) => p.tokens.slice(T).join('');
  return (
    <div className="figure" data-testid="compare">
      <div className="view-head">
        <h3>Compare <span className="muted">A = node {compare[0]}, B = node {compare[1]}, fork at {positionLabel(fork, T)}</span></h3>
        <ExportButtons name="branch-compare" json={() => ({ fork, a: { node: compare[0], ids: a.ids, margins: a.margins }, b: { node: compare[1], ids: b.ids, margins: b.margins } })}
          csv={() => [['branch', 'position', 'position − fork', 'id', 'token', 'margin Δ (nats)'], ...[a, b].flatMap((p, i) => p.ids.slice(T).map((id, j) => ['AB'[i], T + j, T + j - fork, id, p.tokens[T + j], p.margins[T + j]]))]}
          figure={() => svg.current && ({ title: `Two branches aligned at their fork · ${tree.model}`, caption: [`margin Δ = log p(“${tree.good}”) − log p(“${tree.bad}”) per step, x = position − ${fork}`, `prompt: “${tree.prompt}”`], panels: [{ kind: 'svg', element: svg.current }] })} />
      </div>
      <div className="compare">
        {[a, b].map((p, i) => (
          <div key={i}>
            <h4>{'AB'[i]} <span className="muted">node {compare[i]}</span></h4>
            <p className="generated" data-testid={`compare-text-${'ab'[i]}`}><span className="prompt-text">{tree.prompt}</span>
              <span className="new-text">{p.tokens.slice(T, fork).join('')}<mark className="diverge">{p.tokens.slice(fork).join('')}</mark></span></p>
          </div>
        ))}
      </div>
      <LineChart series={series} legend xLabel="position − fork" yLabel="margin Δ (nats)" zeroLine svgRef={svg} label="Margin per step of two branches, aligned at the fork" testId="compare-curve" />
      <p className="hint" data-testid="compare-summary">{`${text(a) === text(b) ? 'Identical texts.' : `They share ${fork - T} new token${fork - T === 1 ? '' : 's'}.`}`}</p>
    </div>
  );
}

/** One fork point's outcome distributions: a dot per continuation, one row per forced token. */
function OutcomeStrip({ p, domain }: { p: ForkPoint; domain: [number, number] }) {
  const W = 220, H = 10 + 12 * p.forced.length;
  const x = (v: number) => 6 + ((v - domain[0]) / (domain[1] - domain[0] || 1)) * (W - 12);
  return (
    <svg width={W} height={H} className="outcome-strip" role="img" aria-label={`outcome margins after forcing each token at position ${p.position}`}>
      <line x1={x(0)} x2={x(0)} y1={0} y2={H} stroke="#8c959f" strokeDasharray="2 2" />
      {p.forced.map((f, i) => (
        <g key={f.id} transform={`translate(0,${8 + 12 * i})`}>
          {f.outcomes.map((v, j) => <circle key={j} cx={x(v)} cy={0} r={2.5} fill={schemeTableau10[i]} opacity={0.7} />)}
          <line x1={x(f.mean)} x2={x(f.mean)} y1={-5} y2={5} stroke={schemeTableau10[i]} strokeWidth={2} />
        </g>
      ))}
    </svg>
  );
}

/** Fork points of the selected branch: the gap marks near ties; resampling scores each position. */
function ForkPoints({ tree }: { tree: BranchTree }) {
  const forks = useStore((s) => s.forks);
  const gap = useStore((s) => s.gapThreshold);
  const setGap = useStore((s) => s.setGapThreshold);
  const samples = useStore((s) => s.forkSamples);
  const setSamples = useStore((s) => s.setForkSamples);
  const node = useStore((s) => s.branchNode);
  const job = useStore((s) => s.job);
  const nearOnly = useStore((s) => s.forkNearTiesOnly);
  const setNearOnly = useStore((s) => s.setForkNearTiesOnly);
  const rate = useStore((s) => s.decodeRate);
  const identity = useStore((s) => s.modelIdentity);
  // what the run would cost, before it runs: recomputed when the branch or the settings change
  const work = useMemo(() => forkPointsWork(), [tree, node, samples, gap, nearOnly]);
  const seconds = work ? forkSeconds(work, rate, identity) : null;
  const svg = useRef<SVGSVGElement | null>(null);
  const gapSvg = useRef<SVGSVGElement | null>(null);
  const r: ForkPointsResult | null = forks && forks.node === node ? forks : null;
  // The result lands below the button, often below the fold: bring the chart into view once, when it answers a press here.
  const chart = useRef<HTMLDivElement | null>(null);
  const asked = useRef(false);
  useEffect(() => {
    if (r && asked.current) chart.current?.scrollIntoView({ block: 'nearest' });
    asked.current = false;
  }, [r]);
  const scored = r ? r.points.filter((p) => Number.isFinite(p.score)) : [];
  const stepDomain: [number, number] | undefined = r?.points.length ? [Math.min(...r.points.map((p) => p.step)), Math.max(...r.points.map((p) => p.step))] : undefined;
  // what the run was to score (the estimate's positions), not every new token
  const planned = r ? r.points.filter((p) => p.gap <= r.maxGap).length : 0;
  const all = scored.flatMap((p) => p.forced.flatMap((f) => f.outcomes));
  const domain: [number, number] = all.length ? [Math.min(0, ...all), Math.max(0, ...all)] : [-1, 1];
  return (
    <div className="figure" data-testid="fork-points">
      <h3>Fork points <span className="muted">(Bigelow et al., arXiv 2412.07961)</span></h3>
      <div className="row settings">
        <label title="Tokens whose top-1 − top-2 probability gap is at most this are marked (dotted) in the branch">Near-tie gap ≤
          <input type="range" min={0} max={1} step={0.01} value={gap} data-testid="gap-threshold" onChange={(e) => setGap(Number(e.target.value))} />
          <span className="mono">{fixed(gap, 2)}</span>
        </label>
        <label>Continuations per token
          <input type="number" className="short" min={1} max={64} value={samples} data-testid="fork-samples" onChange={(e) => { const n = Number(e.target.value); if (Number.isInteger(n) && n >= 1) setSamples(n); }} />
        </label>
        <label title="Score only the tokens marked as near ties (gap ≤ the slider) rather than every new token">
          <input type="checkbox" checked={nearOnly} data-testid="fork-near-ties-only" onChange={(e) => setNearOnly(e.target.checked)} /> near ties only
        </label>
        <button type="button" data-testid="find-forks" title={waitingFor(job)} disabled={!!job || work?.positions === 0} onClick={() => { asked.current = true; void findForkPoints(); }}>Find fork points</button>
      </div>
      {work && (
        <p className="hint" data-testid="fork-estimate" data-continuations={work.continuations} data-seconds={seconds ?? ''}>
          {work.positions === 0
            ? `No new token of this branch is a near tie (gap ≤ ${fixed(gap, 2)}): raise the slider or untick “near ties only”.`
            : <>Scores {work.positions} {tokensWord(work.positions, nearOnly && gap < 1)} of branch node {node}{node === 0 ? ' (the trunk)' : ''} (the one selected above): {work.continuations} continuations ({work.tokens} token positions through the model),{' '}
              {seconds !== null ? <>{duration(seconds)} at this load’s measured {fixed(rate!.secondsPerToken * 1000, 1)} ms per token.</> : 'time not measured yet on this load (generate a trunk first).'}</>}
        </p>
      )}
      <p className="hint">At each new token (or each near tie): force the chosen token and the most likely other one, sample continuations (seeded, T = 1) to the end, and read the outcome Δ after each. Score = |mean Δ(other) − mean Δ(chosen)|: how far forcing another token there moves the outcome.</p>
      {r && (
        <>
          {r.cancelled && <p className="note-warn" role="status" data-testid="fork-cancelled">Cancelled: {scored.length} of {planned} {tokensWord(planned, r.maxGap < 1)} scored; the others are left unscored.</p>}
          <div className="view-head" ref={chart}>
            <p className="muted" data-testid="fork-scored-branch">Scored: branch node {r.node}{r.node === 0 ? ' (the trunk)' : ''}.</p>
            {/* one x axis for both charts (every new token of the branch); the score line breaks at tokens left unscored (NaN), never drawn across them */}
            <LineChart series={[{ name: 'score', color: '#d9480f', points: r.points.map((p) => [p.step, Number.isFinite(p.score) ? p.score : NaN] as [number, number]) }]} xDomain={stepDomain}
              xLabel={`new token k (position ${tree.promptIds.length} + k)`} yLabel="fork score (nats)" svgRef={svg} width={560} height={180} label="Fork score per new token (nats)" testId="fork-score-chart" />
            <LineChart series={[{ name: 'gap (p1 − p2)', color: '#0969da', dashed: true, points: r.points.map((p) => [p.step, p.gap] as [number, number]) }]} xDomain={stepDomain}
              xLabel={`new token k (position ${tree.promptIds.length} + k)`} yLabel="gap (probability)" svgRef={gapSvg} width={560} height={150} label="Top-1/top-2 probability gap per new token" testId="fork-gap-chart" />
            <ExportButtons name={`fork-points-${tree.model}`} json={() => ({ model: tree.model, prompt: tree.prompt, good: tree.good, bad: tree.bad, ...r })}
              csv={() => [['position', 'new token', 'token', 'gap p(top-1) − p(top-2)', 'score (nats)', 'forced token', 'its probability', 'mean outcome Δ (nats)', 'fraction of continuations with Δ > 0'], ...r.points.flatMap((p) => (p.forced.length ? p.forced : [null]).map((f) => [p.position, p.step, p.token, p.gap, p.score, f?.token ?? '', f?.prob ?? '', f?.mean ?? '', f?.fracGood ?? '']))]}
              figure={() => svg.current && gapSvg.current && ({ title: `Fork points · ${tree.model} · node ${r.node}`, caption: [`score = |mean outcome Δ(alternative) − mean outcome Δ(chosen)| (nats), outcome Δ = log p(“${tree.good}”) − log p(“${tree.bad}”) after ${r.samples} seeded continuations per forced token (seed ${r.seed}); gap = p(top-1) − p(top-2)`, `prompt: “${tree.prompt}”`], panels: [{ kind: 'svg', title: 'Fork score (nats)', element: svg.current }, { kind: 'svg', title: 'Top-1/top-2 gap (probability)', element: gapSvg.current }] })} />
          </div>
          <div className="table-scroll">
            <table className="data-table" data-testid="fork-table">
              <thead><tr><th title="absolute position in the sequence (prompt tokens first), and which new token it is">position (new token)</th><th>token</th><th>gap</th><th>score</th><th className="outcomes-head">outcome Δ per forced token (dots: continuations, bar: mean)</th></tr></thead>
              <tbody>
                {scored.map((p) => (
                  <tr key={p.position} data-testid="fork-row" data-step={p.step} data-score={p.score}>
                    <td>{p.position} <span className="muted">(new {p.step})</span></td><td className="mono">{visibleToken(p.token)}</td><td className="mono">{fixed(p.gap, 3)}</td><td className="mono">{fixed(p.score, 3)}</td>
                    <td className="outcomes">
                      <OutcomeStrip p={p} domain={domain} />
                      <span className="muted">{p.forced.map((f) => `${quotedToken(f.token)} ${signed(f.mean, 2)} (${Math.round(f.fracGood * 100)} % good)`).join(' · ')}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </div>
  );
}

/**
 * Branch explorer (DESIGN.md §3 "Fork points"): generate a trunk, click any token to see the
 * alternatives and their lens margins, fork to one (the shared prefix comes from the KV cache),
 * and read the tree; compare two branches; find fork points; export and reopen the tree.
 */
export function BranchView() {
  const tree = useStore((s) => s.tree);
  const dropped = useStore((s) => s.droppedTree);
  const node = useStore((s) => s.branchNode);
  const compare = useStore((s) => s.compare);
  const colour = useStore((s) => s.nodeColour);
  const setColour = useStore((s) => s.setNodeColour);
  const select = useStore((s) => s.setBranchNode);
  const toggle = useStore((s) => s.toggleCompare);
  const svg = useRef<SVGSVGElement | null>(null);
  const path = tree ? pathOf(tree, tree.nodes.some((n) => n.id === node) ? node : 0) : null;
  const scale = tree ? nodeColourScale(tree, colour) : null;
  return (
    <section className="view" data-testid="branch-view">
      <header className="view-head">
        <h2>Branches</h2>
        <p className="muted">A generation as a tree of local decisions: at any token, force another choice and continue; the margin of the futures along each branch shows which decisions mattered. Forks reuse the KV cache of the shared prefix.</p>
      </header>
      <TreeForm />
      {!tree && dropped && <p className="stale-note" role="status" data-testid="branch-dropped">The branch tree grown with {dropped.was} was cleared when {dropped.now} was loaded (its forks lived in that model): generate a trunk again.</p>}
      {tree && path && scale ? (
        <>
          <ResultStatus model={tree.model} testId="branch-status" />
          <div className="view-head">
            <p className="muted" data-testid="branch-caption" title={`good: ${tree.good}\nbad: ${tree.bad}`}>{tree.model} · “{tree.prompt}” · Δ = log p(<b className="good">{futureShort(tree.good)}</b>) − log p(<b className="bad">{futureShort(tree.bad)}</b>) · {tree.nodes.length} branch{tree.nodes.length === 1 ? '' : 'es'}</p>
            <ExportButtons name={`branch-tree-${tree.model}`} json={() => tree}
              csv={() => [['node', 'parent', 'start', 'position', 'id', 'token', 'log p of the token (nats)', 'margin Δ of the futures (nats)', 'entropy (nats)'], ...tree.nodes.flatMap((n) => n.ids.map((id, i) => [n.id, n.parent ?? '', n.start, n.start + i, id, n.tokens[i], n.logProbs[i], n.margins[i], n.entropy[i]]))]}
              figure={() => svg.current && ({ title: `Branch tree · ${tree.model}`, caption: [`prompt: “${tree.prompt}” · Δ = log p(“${tree.good}”) − log p(“${tree.bad}”)`, `nodes coloured by ${COLOURS.find((c) => c.value === colour)!.title} (for margins red < 0 < blue, as in the margin heatmap; range ${fixed(scale.domain[0], 2)} … ${fixed(scale.domain[1], 2)}); edges: the forced token and its probability`], panels: [{ kind: 'svg', element: svg.current, scale: { color: scale.color, domain: scale.domain, title: COLOURS.find((c) => c.value === colour)!.title, ...(colour === 'mean_entropy' ? {} : { lowNote: `← favours ${visibleToken(tree.bad)}`, highNote: `favours ${visibleToken(tree.good)} →` }) } }] })} />
          </div>
          <div className="row settings">
            <label>Colour nodes by
              <select data-testid="node-colour" value={colour} onChange={(e) => setColour(e.target.value as NodeColour)}>
                {COLOURS.map((c) => <option key={c.value} value={c.value}>{c.title}</option>)}
              </select>
            </label>
            <ColorLegend color={scale.color} domain={scale.domain} title={COLOURS.find((c) => c.value === colour)!.title} width={220}
              {...(colour === 'mean_entropy' ? {} : { lowNote: `← favours ${futureShort(tree.bad)}`, highNote: `favours ${futureShort(tree.good)} →` })} testId="branch-legend" />
          </div>
          <BranchTreeChart tree={tree} colour={colour} selected={node} compare={compare} onSelect={select} onCompare={toggle} svgRef={svg} />
          <p className="hint">Click a branch to show its tokens; shift-click two to compare them. Selected: node {node}{tree.nodes.find((n) => n.id === node)?.parent != null ? `, ${tree.nodes.find((n) => n.id === node)!.forwarded} positions computed for it (the shared prefix came from the KV cache)` : ''} · value {fixed(nodeValue(tree.nodes.find((n) => n.id === node) ?? tree.nodes[0], colour), 3)}.</p>
          <h3>Tokens of node {node} <span className="muted">(numbered by absolute position: new tokens from {tree.promptIds.length}; underlined blue where Δ &gt; 0, red where Δ &lt; 0; dotted: near tie)</span></h3>
          <PathTokens tree={tree} path={path} node={node} />
          <ForkPanel tree={tree} path={path} />
          <Compare tree={tree} />
          <ForkPoints tree={tree} />
        </>
      ) : <p className="placeholder">Generate a trunk from the experiment's prompt, then click any token to fork.</p>}
    </section>
  );
}
