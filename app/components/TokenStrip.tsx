import { useEffect, useRef } from 'react';
import { visibleToken } from '../lib/format';
import { tokenLabels } from '../lib/token_labels';
import { inPrefix, PREFIX_TITLE } from '../lib/decision_point_tokens';
import { useStore } from '../store';

/** Positions [start, end) of the strip. */
export interface TokenRange {
  start: number;
  end: number;
}

export interface TokenStripProps {
  tokens: readonly string[];
  ids: readonly number[];
  /** How many of the last tokens are the futures' teacher-forced shared prefix (decision_point.ts): marked, not the user's text. */
  prefix?: number;
  /** Position to highlight (the column under the pointer in a view). */
  highlight?: number | null;
  /** Per position, the numbers (#n) of the interventions that steer it; marked tokens are outlined and labelled. */
  marks?: readonly (readonly number[])[];
  /** The selected range, shown shaded. */
  selection?: TokenRange | null;
  /** Makes tokens selectable: click one, drag across several, or shift-click to extend from the last click. */
  onSelect?: (r: TokenRange | null) => void;
}

/**
 * The prompt's tokens in order, each with its position and id; steered tokens are marked with their
 * interventions; the futures' shared prefix after the prompt is marked (class `prefix`, data-prefix);
 * a byte-fallback token that is not a character by itself shows its byte ("<0xE2>").
 */
export function TokenStrip({ tokens, ids, prefix = 0, highlight, marks, selection, onSelect }: TokenStripProps) {
  const anchor = useRef<number | null>(null);
  const dragging = useRef(false);
  useEffect(() => {
    const up = () => { dragging.current = false; };
    window.addEventListener('mouseup', up);
    return () => window.removeEventListener('mouseup', up);
  }, []);
  const span = (a: number, b: number): TokenRange => ({ start: Math.min(a, b), end: Math.max(a, b) + 1 });
  const pick = (i: number, extend: boolean) => {
    if (!onSelect) return;
    if (extend && anchor.current !== null) {
      onSelect(span(anchor.current, i));
    } else {
      anchor.current = i;
      onSelect({ start: i, end: i + 1 });
    }
  };
  const selectable = Boolean(onSelect);
  const byteTokens = useStore((s) => s.info?.byteTokens);
  const { labels, isByte } = tokenLabels(tokens, ids, byteTokens);
  return (
    <ol className={`token-strip${selectable ? ' selectable' : ''}`} data-testid="token-strip" aria-label={`${tokens.length} prompt tokens`}>
      {tokens.map((_t, i) => {
        const m = marks?.[i] ?? [];
        const inSel = selection ? i >= selection.start && i < selection.end : false;
        const pre = inPrefix(i, tokens.length, prefix);
        const cls = [i === highlight ? 'hl' : '', m.length ? 'steered' : '', inSel ? 'selected' : '', pre ? 'prefix' : ''].filter(Boolean).join(' ');
        return (
          <li
            key={i} className={cls || undefined} data-testid={`token-${i}`} data-id={ids[i]}
            data-steered={m.length ? m.join(' ') : undefined} data-prefix={pre ? 'true' : undefined}
            title={`position ${i} · id ${ids[i]}${pre ? ` · ${PREFIX_TITLE}` : ''}${m.length ? ` · steered by ${m.map((n) => `#${n}`).join(', ')}` : ''}`}
            tabIndex={selectable ? 0 : undefined}
            aria-selected={selectable ? inSel : undefined}
            onMouseDown={selectable ? (e) => { e.preventDefault(); dragging.current = !e.shiftKey; pick(i, e.shiftKey); } : undefined}
            onMouseEnter={selectable ? () => { if (dragging.current && anchor.current !== null) onSelect!(span(anchor.current, i)); } : undefined}
            onKeyDown={selectable ? (e) => {
              if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(i, e.shiftKey); }
              if (e.key === 'Escape') onSelect!(null);
            } : undefined}
          >
            <span className="idx">{i}</span>
            <span className={isByte[i] ? 'txt byte' : 'txt'} data-byte={isByte[i] || undefined}>{isByte[i] ? labels[i] : visibleToken(labels[i])}</span>
            {m.length > 0 && <span className="steer-mark">{m.map((n) => `#${n}`).join(' ')}</span>}
          </li>
        );
      })}
    </ol>
  );
}
