import { useEffect, useMemo, useRef, useState } from 'react';
import { interpolateYlOrRd, scaleSequential } from 'd3';
import { useStore } from '../store';
import { openLayerPatterns } from '../actions/analyse';
import { splitHeads, type HeadPattern } from '../lib/head_patterns';
import { blockName, blockShort } from '../lib/layer_names';
import { fixed, visibleToken } from '../lib/format';
import { ColorLegend } from '../components/ColorLegend';
import { useWaitingFor } from '../components/useWaitingFor';
import type { AnalysisResult } from '../store/results';

const patternColor = scaleSequential(interpolateYlOrRd).domain([0, 1]);
/** A tile's side in CSS pixels (before rounding to whole cells). */
const TILE = 150;

/** A query and a key position under the pointer. */
interface QK { q: number; k: number }

/**
 * One head's pattern as a small canvas, [query rows × key columns] at `px` pixels a cell, with the
 * hovered query row and key column outlined (the same cell in every tile).
 */
function HeadTile({ head, data, T, px, hover, onHover, onOpen }: { head: number; data: HeadPattern; T: number; px: number; hover: QK | null; onHover: (h: QK | null) => void; onOpen: () => void }) {
  const ref = useRef<HTMLCanvasElement | null>(null);
  useEffect(() => {
    const c = ref.current;
    if (!c) return;
    const dpr = window.devicePixelRatio || 1, side = T * px;
    c.width = Math.ceil(side * dpr); c.height = Math.ceil(side * dpr);
    c.style.width = `${side}px`; c.style.height = `${side}px`;
    const ctx = c.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) {
      ctx.fillStyle = patternColor(data[i * T + j]);
      ctx.fillRect(j * px, i * px, px, px);
    }
    if (hover) {
      ctx.strokeStyle = '#1f6feb'; ctx.lineWidth = 1;
      ctx.strokeRect(0.5, hover.q * px + 0.5, side - 1, px - 1);
      ctx.strokeStyle = '#8250df';
      ctx.strokeRect(hover.k * px + 0.5, 0.5, px - 1, side - 1);
      ctx.strokeStyle = '#000'; ctx.lineWidth = 2;
      ctx.strokeRect(hover.k * px + 1, hover.q * px + 1, px - 2, px - 2);
    }
  }, [data, T, px, hover]);
  const at = (e: React.MouseEvent<HTMLCanvasElement>): QK | null => {
    const q = Math.floor(e.nativeEvent.offsetY / px), k = Math.floor(e.nativeEvent.offsetX / px);
    return q >= 0 && q < T && k >= 0 && k < T ? { q, k } : null;
  };
  return (
    <figure className="head-tile">
      <canvas ref={ref} role="img" aria-label={`Head ${head}: attention pattern, query by key; click to enlarge`} data-testid={`head-tile-${head}`} data-px={px}
        onMouseMove={(e) => onHover(at(e))} onMouseLeave={() => onHover(null)} onClick={onOpen} />
      <figcaption>H{head}{hover && <span className="mono" data-testid={`head-tile-value-${head}`}> {fixed(data[hover.q * T + hover.k], 3)}</span>}</figcaption>
    </figure>
  );
}

/**
 * All heads at once (circuitsvis-style small multiples): every head's attention pattern of one
 * layer, blocks.{l}.attn.hook_pattern [n_heads, T, T] of the analysis on display (with its
 * interventions). Pointing at a cell links its query and key tokens in the token line and outlines
 * the same cell in every head; clicking a head enlarges it in the one-head pattern below.
 */
export function AllHeadsPanel({ r }: { r: AnalysisResult }) {
  const a = r.analysis, T = a.ids.length, H = a.nHeads;
  const lp = useStore((s) => s.layerPatterns);
  const busy = useStore((s) => s.job !== null);
  const waiting = useWaitingFor();
  const setPattern = useStore((s) => s.setPattern);
  const setSelectedHead = useStore((s) => s.setSelectedHead);
  const [layer, setLayer] = useState(lp?.layer ?? 0);
  const [hover, setHover] = useState<QK | null>(null);
  const heads = useMemo(() => (lp && lp.nHeads === H && lp.data.length === H * T * T ? splitHeads(lp.data, H, T) : null), [lp, H, T]);
  const px = Math.max(2, Math.floor(TILE / T));
  const open = (h: number) => {
    if (!lp || !heads) return;
    setSelectedHead({ layer: lp.layer, head: h });
    setPattern({ layer: lp.layer, head: h, data: heads[h].slice() });
    requestAnimationFrame(() => document.querySelector('[data-testid="pattern-view"]')?.scrollIntoView({ block: 'start' }));
  };
  return (
    <section className="subview" data-testid="all-heads" data-layer={lp?.layer ?? ''}>
      <header className="view-head">
        <h3>All heads{lp ? ` · ${blockName(lp.layer, 'attn.hook_pattern')}` : ''}</h3>
        <p className="muted">Every head's attention pattern of one layer side by side (rows: queries, columns: keys). Point at a cell to link its query and key tokens in every head; click a head to enlarge it.</p>
        <div className="row settings">
          <label>Layer
            <select data-testid="all-heads-layer" value={layer} onChange={(e) => setLayer(Number(e.target.value))}>
              {Array.from({ length: a.nLayers }, (_, l) => <option key={l} value={l}>{blockShort(l)}</option>)}
            </select>
          </label>
          <button type="button" data-testid="all-heads-show" title={waiting} disabled={busy} onClick={() => void openLayerPatterns(layer)}>Show all heads</button>
        </div>
      </header>
      {heads && lp && (
        <>
          <ol className="token-strip head-tokens" data-testid="all-heads-tokens" aria-label="tokens: the hovered query and key">
            {a.tokens.map((t, i) => (
              <li key={i} className={hover?.q === i ? 'query' : hover?.k === i ? 'key' : undefined} data-role={hover?.q === i ? 'query' : hover?.k === i ? 'key' : undefined}>
                <span className="idx">{i}</span><span className="txt">{visibleToken(t)}</span>
              </li>
            ))}
          </ol>
          <p className="muted" data-testid="all-heads-hover">{hover ? `query ${hover.q} “${visibleToken(a.tokens[hover.q])}” attends to key ${hover.k} “${visibleToken(a.tokens[hover.k])}”` : 'Point at a cell of any head.'}</p>
          <div className="head-grid" data-testid="head-grid">
            {heads.map((d, h) => <HeadTile key={h} head={h} data={d} T={T} px={px} hover={hover} onHover={setHover} onOpen={() => open(h)} />)}
          </div>
          <ColorLegend color={patternColor} domain={[0, 1]} title="attention probability" testId="all-heads-legend" />
        </>
      )}
    </section>
  );
}
