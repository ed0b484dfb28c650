import { useMemo, useRef, useState } from 'react';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { useStore } from '../store';
import { runStudy } from '../actions/study';
import { useStudy } from '../components/useStudy';
import { useChatTurn } from '../components/useExperimentRequest';
import { ColorLegend } from '../components/ColorLegend';
import { ExportButtons } from '../components/ExportButtons';
import { Heatmap } from '../components/Heatmap';
import { SignedBars } from '../components/SignedBars';
import { LineChart } from '../components/LineChart';
import { divergingScale } from '../lib/color_scale';
import { sparseTicks } from '../lib/sparse_ticks';
import { signed, visibleToken } from '../lib/format';
import { waitingFor } from '../lib/job_rules';
import type { StudyRequest, StudyResult } from '../../workers/protocol';
import { SpanFaithfulnessPanel } from './SpanFaithfulnessPanel';

type Span = { label: string; start: number; end: number };
type Flow = StudyResult<'flow'>;
type Dla = StudyResult<'dla'>;

/** Largest |v| (at least a small floor, so an all-zero map draws neutral). */
const extent = (vs: ArrayLike<number>): number => Math.max(1e-6, ...Array.from(vs, Math.abs));

/** The token strip coloured by attribution: blue = toward the good future, red = toward the bad; click / shift-click selects a range. */
function AttributionStrip({ tokens, values, nPrompt, selection, onSelect, spans }: { tokens: readonly string[]; values: ArrayLike<number>; nPrompt: number; selection: Span | null; onSelect: (r: Span | null) => void; spans: readonly Span[] }) {
  const m = extent(values);
  const color = divergingScale(m);
  const anchor = useRef<number | null>(null);
  return (
    <ol className="token-strip selectable attribution-strip" data-testid="attribution-strip">
      {tokens.map((t, i) => {
        const v = i < nPrompt ? values[i] : NaN;
        const inSel = selection && i >= selection.start && i < selection.end;
        const inSpan = spans.find((s) => i >= s.start && i < s.end);
        return (
          <li
            key={i} data-testid={`attr-token-${i}`} className={[inSel ? 'selected' : '', i >= nPrompt ? 'generated' : ''].filter(Boolean).join(' ') || undefined}
            style={{ background: Number.isFinite(v) ? color(v) : '#eaeef2', color: Number.isFinite(v) && Math.abs(v) > 0.6 * m ? '#ffffff' : undefined, outline: inSpan ? '2px solid #bf8700' : undefined, cursor: 'pointer', padding: '2px 3px', margin: 1, borderRadius: 3 }}
            title={`position ${i}${i >= nPrompt ? ' (generated: its credit was handed back)' : ` · ${signed(v, 4)} nats`}${inSpan ? ` · span “${inSpan.label}”` : ''}`}
            onClick={(e) => {
              if (i >= nPrompt) return;
              if (e.shiftKey && anchor.current !== null) onSelect({ label: '', start: Math.min(anchor.current, i), end: Math.max(anchor.current, i) + 1 });
              else { anchor.current = i; onSelect({ label: '', start: i, end: i + 1 }); }
            }}
          >
            <span className="mono">{visibleToken(t)}</span>
          </li>
        );
      })}
    </ol>
  );
}

/**
 * Attribution of the margin (DESIGN.md §3 "Attribution"): which earlier tokens and spans carry the
 * decision — the flow attribution (value-weighted attention projected on the margin direction,
 * recursive through generated tokens; studies/flow.ts) on the token strip and per span, with its
 * deletion / insertion curves; and the direct logit attribution (final norm frozen; studies/dla.ts)
 * per layer and component and per head.
 */
export function AttributionView() {
  const prompt = useStore((s) => s.prompt);
  const turn = useChatTurn();
  const good = useStore((s) => s.good.value);
  const bad = useStore((s) => s.bad.value);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const [spans, setSpans] = useState<Span[]>([]);
  const [selection, setSelection] = useState<Span | null>(null);
  const [spanLabel, setSpanLabel] = useState('');
  const [generated, setGenerated] = useState(0);
  const flowReq: StudyRequest<'flow'> = { prompt, ...turn, good: { text: good }, bad: { text: bad }, spans, generated };
  const dlaReq: StudyRequest<'dla'> = { prompt, ...turn, good: { text: good }, bad: { text: bad } };
  const flow = useStudy('flow', flowReq);
  const dla = useStudy('dla', dlaReq);
  const f: Flow | undefined = flow.run?.result;
  const d: Dla | undefined = dla.run?.result;
  const stripSvg = useRef<SVGSVGElement | null>(null);
  const curveSvg = useRef<SVGSVGElement | null>(null);
  const layerSvg = useRef<SVGSVGElement | null>(null);
  const run = async () => {
    await runStudy('flow', flowReq, { label: 'Flow attribution', what: 'Could not compute the flow attribution' });
    await runStudy('dla', dlaReq, { label: 'Direct logit attribution', what: 'Could not compute the direct logit attribution' });
  };
  const addSpan = () => {
    if (!selection) return;
    setSpans([...spans, { ...selection, label: spanLabel || `span ${spans.length + 1}` }]);
    setSpanLabel('');
    setSelection(null);
  };
  const m = f ? extent(f.attribution) : 1;
  const headM = d ? extent(d.heads) : 1;
  const layerRows = useMemo(() => (d ? [
    { label: 'embeddings', value: d.embed + d.posEmbed, color: '#6e7781' },
    ...Array.from(d.attn, (_, l) => [{ label: `L${l} attn`, value: d.attn[l], color: '#0969da' }, { label: `L${l} mlp`, value: d.mlp[l], color: '#bf8700' }]).flat(),
    ...(d.finalBias !== 0 ? [{ label: 'final norm / unembed bias', value: d.finalBias, color: '#8c959f' }] : []),
  ] : []), [d]);
  const tokensOf = (r: Flow) => r.tokens;
  return (
    <section className="view" data-testid="attribution-view">
      <header className="view-head">
        <h2>Attribution</h2>
        <p className="muted">
          Which earlier tokens and spans carry the decision Δ = log p(<b className="good">{visibleToken(good)}</b>) − log p(<b className="bad">{visibleToken(bad)}</b>)?
          The <b>flow</b> follows each attention head’s value-weighted reads A·(v W_O), projected on the margin direction, down through the layers (attention patterns and
          norm scales frozen at this run; an MLP’s output counts for its own token); generated tokens hand their credit back to the prompt. The <b>direct logit
          attribution</b> splits Δ over the embeddings, each layer’s attention and MLP and each head, with the final norm frozen at its scale on the run — a linear
          approximation: the parts add up to the frozen margin exactly.
        </p>
      </header>
      <form className="row settings" onSubmit={(e) => { e.preventDefault(); if (!job) void run(); }}>
        <label>generated tokens <input type="number" min={0} max={64} value={generated} data-testid="attribution-generated" onChange={(e) => setGenerated(Math.max(0, Number(e.target.value) || 0))} style={{ width: 60 }} /></label>
        <button type="submit" className="primary" data-testid="run-attribution" title={waitingFor(job)} disabled={!!job || !ready}>Run attribution</button>
        {selection && (
          <>
            <span className="muted">selected {selection.start}–{selection.end - 1}</span>
            <input placeholder="span label (evidence, distractor…)" value={spanLabel} onChange={(e) => setSpanLabel(e.target.value)} data-testid="span-label" />
            <button type="button" onClick={addSpan} data-testid="add-span">Add span</button>
          </>
        )}
        {spans.length > 0 && <button type="button" onClick={() => setSpans([])} data-testid="clear-spans">Clear spans</button>}
      </form>
      {flow.stale && f && <p className="warn" data-testid="attribution-stale">These numbers are for an earlier request or model: run again to update them.</p>}
      {f ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="attribution-caption">
              Δ = <span className="mono" data-testid="attribution-margin">{signed(f.margin, 3)}</span> nats at the last position
              {f.ids.length > f.nPrompt ? ` after ${f.ids.length - f.nPrompt} generated tokens` : ''} · Σ tokens + constants = {signed(f.frozenMargin, 3)} (frozen norms) · constants {signed(f.bias, 3)}
            </p>
            <SharedPrefixNote shared={f.sharedPrefix} testId="attribution-shared-prefix" />
            <ExportButtons
              name="attribution"
              json={() => ({ flow: f, dla: d })}
              csv={() => [['position', 'token', 'flow attribution (nats of Δ)', 'direct credit before hand-back (nats)'], ...tokensOf(f).map((t, i) => [i, t, i < f.nPrompt ? f.attribution[i] : '', f.direct[i]]),
                ...f.spans.map((s) => [`span ${s.start}–${s.end}`, s.label, s.value, '']),
                ...(f.faithfulness ? f.faithfulness.k.map((k, i) => [`k=${k}`, 'deletion / insertion Δ (nats)', f.faithfulness!.deletion[i], f.faithfulness!.insertion[i]]) : [])]}
              figure={() => curveSvg.current && ({
                title: 'Attribution of the margin',
                caption: [`Δ = log p(“${good}”) − log p(“${bad}”) · prompt “${prompt}”`, 'flow attribution: value-weighted attention projected on the margin direction (frozen norms and patterns)'],
                panels: [stripSvg.current, curveSvg.current, layerSvg.current].filter((x): x is SVGSVGElement => !!x).map((element) => ({ kind: 'svg' as const, element })),
              })}
            />
          </div>
          <AttributionStrip tokens={f.tokens} values={f.attribution} nPrompt={f.nPrompt} selection={selection} onSelect={setSelection} spans={spans} />
          <ColorLegend color={divergingScale(m)} domain={[-m, m]} title="flow attribution (nats of Δ)" lowNote={`red: pushes toward “${bad}” (lowers Δ)`} highNote={`blue: pushes toward “${good}” (raises Δ)`} testId="attribution-legend" />
          <p className="hint">Click a token, shift-click another to select a span, name it and add it: each span gets one number (the sum of its tokens).</p>
          <div className="view-body" style={{ display: 'flex', flexWrap: 'wrap', gap: 24 }}>
            {f.spans.length > 0 && (
              <div className="figure">
                <h3>Spans</h3>
                <SignedBars svgRef={stripSvg} rows={f.spans.map((s) => ({ label: `${s.label} (${s.end - s.start > 1 ? `${s.start}–${s.end - 1}` : s.start})`, value: s.value }))} testId="span-bars" label="attribution per span" />
              </div>
            )}
            {f.faithfulness && (
              <div className="figure">
                <h3>Faithfulness: deletion and insertion</h3>
                <LineChart
                  series={[
                    { name: 'deletion: top-k tokens replaced', color: '#b2182b', points: f.faithfulness.k.map((k, i) => [k, f.faithfulness!.deletion[i]]) },
                    { name: 'insertion: only top-k kept', color: '#2166ac', points: f.faithfulness.k.map((k, i) => [k, f.faithfulness!.insertion[i]]) },
                  ]}
                  legend zeroLine xTicks={sparseTicks(f.faithfulness.k)} xDomain={[0, Math.max(1, f.faithfulness.k[f.faithfulness.k.length - 1])]}
                  xLabel={`k tokens replaced by id ${f.faithfulness.baselineId} (most positive first)`} yLabel="Δ (nats)"
                  svgRef={curveSvg} width={520} height={240} label="deletion and insertion curves" testId="deletion-curve"
                />
              </div>
            )}
          </div>
        </>
      ) : <p className="placeholder">Run the attribution to colour the prompt’s tokens by how much each carries the margin; select spans (the evidence, the distractor) to get one number each.</p>}
      {ready && <SpanFaithfulnessPanel prompt={prompt} good={good} bad={bad} turn={turn} spans={spans} />}
      {d && (
        <div className="view-body" style={{ display: 'flex', flexWrap: 'wrap', gap: 24 }} data-testid="dla-panel">
          <div className="figure">
            <h3>Direct logit attribution (final norm frozen)</h3>
            <p className="muted" data-testid="dla-caption">frozen margin {signed(d.frozenMargin, 4)} = Σ parts · true Δ {signed(d.margin, 4)}{Math.abs(d.entropyGap) > 1e-9 ? ` (sets: + entropy gap ${signed(d.entropyGap, 3)})` : ''}</p>
            <SignedBars svgRef={layerSvg} rows={layerRows} testId="dla-bars" label="direct logit attribution per layer and component" />
          </div>
          <div className="figure">
            <h3>Per head (layer × head)</h3>
            <Heatmap
              values={d.heads} nRows={d.nLayers} nCols={d.nHeads} color={divergingScale(headM)}
              rowLabels={Array.from({ length: d.nLayers }, (_, l) => `L${l}`)} colLabels={Array.from({ length: d.nHeads }, (_, h) => `H${h}`)}
              rowTitle="layer" colTitle="head" rowsUpward cellWidth={{ min: 22, max: 44 }} cellHeight="square" colIndex={null}
              annotate={(c) => signed(d.heads[c.row * d.nHeads + c.col], 2)} label="direct logit attribution per head" testId="dla-heads"
            />
            <ColorLegend color={divergingScale(headM)} domain={[-headM, headM]} title="head's direct effect on Δ (nats)" lowNote="toward bad" highNote="toward good" width={240} />
          </div>
        </div>
      )}
    </section>
  );
}
