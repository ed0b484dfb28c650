import { describe, expect, it } from 'vitest';
import { positionToken, quotedToken, visibleToken } from '../../app/lib/format';

describe('one way to show a token in text (trials read the report\'s unquoted "," token as a list separator)', () => {
  it('whitespace is visible as in the token strip, and in text the token is quoted', () => {
    expect(visibleToken(' Tom')).toBe('·Tom');
    expect(quotedToken(',')).toBe('“,”');
    expect(quotedToken(' the\n')).toBe('“·the↵”');
    expect(quotedToken('\t')).toBe('“⇥”');
    expect(quotedToken('')).toBe('“∅”');
  });

  it('a list of positions keeps its separators apart from the tokens', () => {
    const list = [[12, ','], [13, ' Tom']].map(([p, t]) => positionToken(p as number, t as string)).join(', ');
    expect(list).toBe('12 “,”, 13 “·Tom”');
  });
});
