import { hierarchy, interpolateYlGnBu, rgb, scaleLinear, scaleSequential } from 'd3';
import { divergingScale } from '../lib/color_scale';
import { useLayoutEffect, useRef, useState, type RefObject } from 'react';
import type { BranchTree, TreeNode } from '../../workers/protocol';
import type { NodeColour } from '../store/branching';
import { quotedToken, visibleToken } from '../lib/format';

/** The scalar a node is coloured by (NaN for an empty node). */
export function nodeValue(n: TreeNode, c: NodeColour): number {
  const xs = c === 'mean_entropy' ? n.entropy : n.margins;
  if (!xs.length) return NaN;
  if (c === 'final_margin') return xs[xs.length - 1];
  return xs.reduce((s, x) => s + x, 0) / xs.length;
}

/** A node colour scale and the range its legend spans. */
export interface NodeColourScale {
  color: (v: number) => string;
  domain: [number, number];
}

/**
 * The colour scale of a scalar over the tree: for margins the margin heatmap's diverging scale
 * (lib/color_scale.ts: Δ < 0 red, 0 neutral, Δ > 0 blue, symmetric over the largest |Δ|), so a
 * margin has one colour in every view; sequential for entropy.
 */
export function nodeColourScale(tree: BranchTree, c: NodeColour): NodeColourScale {
  const vs = tree.nodes.map((n) => nodeValue(n, c)).filter(Number.isFinite);
  if (c === 'mean_entropy') {
    const domain: [number, number] = [0, Math.max(1e-6, ...vs)];
    return { color: scaleSequential(interpolateYlGnBu).domain(domain), domain };
  }
  const m = Math.max(1e-6, ...vs.map(Math.abs));
  return { color: divergingScale(m), domain: [-m, m] };
}

export interface BranchTreeChartProps {
  tree: BranchTree;
  colour: NodeColour;
  selected: number;
  compare: readonly number[];
  onSelect: (id: number) => void;
  onCompare: (id: number) => void;
  svgRef?: RefObject<SVGSVGElement | null>;
}

/**
 * Font size (px) of the token and edge labels (styles.css .tree-token, .edge-label: 12 px monospace;
 * trials found 10 px too small at 1440×900), the width of one of their characters (0.6 em) and a
 * cell's padding.
 */
export const LABEL_PX = 12;
const CHAR = 0.6 * LABEL_PX, PAD = 6;
/** Labels up to this many characters are always shown whole (longer ones are cut with "…", whole in their tooltip). */
export const WHOLE_CHARS = 10;
/** Row pitch, and the left margin that holds the edge label of a fork at the first column: “token” and its probability. */
const ROW = 34, LEFT = Math.ceil((WHOLE_CHARS + 9) * CHAR), TOP = 24, RIGHT = 14;
export const TREE_LEFT = LEFT, TREE_RIGHT = RIGHT;

/**
 * The width of one token column: what fills the panel, but never less than what shows every label
 * of up to WHOLE_CHARS characters whole (trials saw "·hap…" cut at the 80th percentile's width); the
 * panel scrolls sideways when the tree is wider than it.
 */
export function tokenCellWidth(labels: readonly string[], nCols: number, panelWidth: number): number {
  const longest = Math.min(WHOLE_CHARS, Math.max(2, ...labels.map((t) => [...t].length)));
  return Math.max(longest * CHAR + PAD, (panelWidth - LEFT - RIGHT) / Math.max(1, nCols));
}

/** A token label cut to `cell` pixels, with "…" where it was cut (the full text is in its tooltip). */
export function fitLabel(label: string, cell: number): string {
  const chars = [...label], room = Math.max(1, Math.floor((cell - PAD) / CHAR));
  return chars.length <= room ? label : `${chars.slice(0, Math.max(1, room - 1)).join('')}…`;
}

/** Label colours: black and white, one of which reaches contrast ≥ 4.58 on any fill (WCAG AA asks 4.5). */
const INK = '#000000', PAPER = '#ffffff';
/** Opacity of a node's fill over the white panel: full, so a node's colour is the legend's, its labels picked by labelInk. */
const FILL_OPACITY = 1;

/**
 * The colour for text on a cell filled with `fill` at `opacity` over white: white on dark cells,
 * black on light ones, whichever has the larger WCAG 2.x contrast ratio against the blended colour
 * (relative luminance, https://www.w3.org/TR/WCAG21/#dfn-relative-luminance).
 */
export function labelInk(fill: string, opacity = FILL_OPACITY): string {
  const c = rgb(fill);
  const lin = (v: number) => { const u = (opacity * v + (1 - opacity) * 255) / 255; return u <= 0.04045 ? u / 12.92 : ((u + 0.055) / 1.055) ** 2.4; };
  const L = 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
  return 1.05 / (L + 0.05) > (L + 0.05) / 0.05 ? PAPER : INK;
}

/** The width of the element's content box, followed as it resizes. */
function usePanelWidth(): [RefObject<HTMLDivElement | null>, number] {
  const box = useRef<HTMLDivElement | null>(null);
  const [width, setWidth] = useState(800);
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    setWidth(el.clientWidth);
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [box, width];
}

/**
 * The branch tree (D3 hierarchy, preorder rows): each node a run of tokens drawn from its fork
 * position (x = absolute position) to its last token and filled by the chosen scalar; an elbow edge
 * from the parent's row to the fork, labelled with the forced token and its probability. Click a
 * node to show its path; shift-click (or the A/B toggle) to compare two branches.
 */
export function BranchTreeChart({ tree, colour, selected, compare, onSelect, onCompare, svgRef }: BranchTreeChartProps) {
  const [box, panelWidth] = usePanelWidth();
  const byParent = new Map<number | null, TreeNode[]>();
  for (const n of tree.nodes) byParent.set(n.parent, [...(byParent.get(n.parent) ?? []), n]);
  const root = hierarchy(tree.nodes[0], (n) => (byParent.get(n.id) ?? []).slice().sort((a, b) => a.start - b.start || a.id - b.id));
  const order = root.descendants();
  const T = tree.promptIds.length, end = T + tree.maxNewTokens;
  const first = Math.min(T, ...tree.nodes.map((n) => n.start));
  const cell = tokenCellWidth(tree.nodes.flatMap((n) => n.tokens.map(visibleToken)), end - first, panelWidth);
  const width = Math.ceil(LEFT + RIGHT + cell * (end - first));
  const x = scaleLinear().domain([first, end]).range([LEFT, width - RIGHT]);
  const { color } = nodeColourScale(tree, colour);
  const rowOf = new Map(order.map((d, i) => [d.data.id, i]));
  const height = TOP + order.length * ROW + 10;
  const letter = (id: number) => (compare.indexOf(id) === 0 ? 'A' : compare.indexOf(id) === 1 ? 'B' : '');
  return (
    <>
    {width > panelWidth + 1 && <p className="hint scroll-note" data-testid="branch-tree-scroll-note">{end - first} positions, wider than the panel: scroll sideways for the rest →</p>}
    <div className="table-scroll" ref={box} data-testid="branch-tree-panel">
    <svg ref={svgRef} className="chart branch-tree" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label="Branch tree: one row per branch, x = token position" data-testid="branch-tree">
      <text x={x(T)} y={12} className="axis-note" textAnchor="start">new tokens →</text>
      {first < T && <line x1={x(T)} x2={x(T)} y1={16} y2={height - 6} stroke="#d0d7de" strokeDasharray="3 3" />}
      {order.map((d) => {
        const n = d.data, row = rowOf.get(n.id)!, y = TOP + row * ROW;
        const value = nodeValue(n, colour);
        const x0 = x(n.start), x1 = x(n.start + n.ids.length);
        const parentRow = n.parent === null ? null : rowOf.get(n.parent)!;
        const p = Math.exp(n.logProbs[0]);
        const ab = letter(n.id);
        const fill = Number.isFinite(value) ? color(value) : '#eaeef2', ink = labelInk(fill);
        return (
          <g key={n.id} data-testid={`tree-node-${n.id}`} data-start={n.start} data-forwarded={n.forwarded} data-len={n.ids.length} data-value={value} data-parent={n.parent ?? ''}
            className={`tree-node${n.id === selected ? ' selected' : ''}`} onClick={(e) => (e.shiftKey ? onCompare(n.id) : onSelect(n.id))}>
            {parentRow !== null && (
              <>
                <path d={`M${x0},${TOP + parentRow * ROW + ROW - 8} V${y + (ROW - 8) / 2} h2`} fill="none" stroke="#57606a" />
                <text x={x0 - 4} y={y + (ROW - 8) / 2} textAnchor="end" dominantBaseline="middle" className="edge-label" data-testid={`tree-edge-${n.id}`}>
                  {`${quotedToken(n.tokens[0] ?? '')} ${p < 0.001 ? p.toExponential(1) : p.toFixed(3)}`}
                </text>
              </>
            )}
            {n.parent === null && <text x={LEFT - 8} y={y + (ROW - 8) / 2} textAnchor="end" dominantBaseline="middle" className="edge-label">trunk</text>}
            <rect x={x0} y={y} width={Math.max(2, x1 - x0)} height={ROW - 8} rx={3} fill={fill} fillOpacity={FILL_OPACITY}
              stroke={n.id === selected ? '#1f2328' : ab ? '#8250df' : '#8c959f'} strokeWidth={n.id === selected ? 2.5 : ab ? 2 : 1} strokeDasharray={ab && n.id !== selected ? '4 2' : undefined} />
            {n.tokens.map((t, i) => (
              <text key={i} x={x(n.start + i) + 2} y={y + (ROW - 8) / 2} dominantBaseline="middle" className="tree-token" data-testid="tree-token" style={{ fill: ink }}>
                {fitLabel(visibleToken(t), cell)}
                <title>{`position ${n.start + i}: ${quotedToken(t)}`}</title>
              </text>
            ))}
            {ab && <text x={x1 + 4} y={y + (ROW - 8) / 2} dominantBaseline="middle" className="compare-letter">{ab}</text>}
            <title>{`node ${n.id}${n.parent === null ? ' (trunk)' : `, forked from node ${n.parent} at position ${n.start}`} · ${n.ids.length} tokens · ${colour.replace('_', ' ')} ${Number.isFinite(value) ? value.toFixed(3) : '—'} · ${n.settings.temperature > 0 ? `sampled T=${n.settings.temperature} seed ${n.settings.seed}` : 'greedy'}${n.settings.steered ? ' · steered' : ''} · ${n.forwarded} positions computed`}</title>
          </g>
        );
      })}
    </svg>
    </div>
    </>
  );
}
