import { visibleToken } from '../lib/format';

export interface TokenStripProps {
  tokens: readonly string[];
  ids: readonly number[];
  /** Position to highlight (the column under the pointer in a view). */
  highlight?: number | null;
}

/** The prompt's tokens in order, each with its position and id. */
export function TokenStrip({ tokens, ids, highlight }: TokenStripProps) {
  return (
    <ol className="token-strip" data-testid="token-strip" aria-label={`${tokens.length} prompt tokens`}>
      {tokens.map((t, i) => (
        <li key={i} className={i === highlight ? 'hl' : undefined} data-testid={`token-${i}`} data-id={ids[i]} title={`position ${i} · id ${ids[i]}`}>
          <span className="idx">{i}</span>
          <span className="txt">{visibleToken(t)}</span>
        </li>
      ))}
    </ol>
  );
}
