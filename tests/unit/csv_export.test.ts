import { describe, expect, it } from 'vitest';
import { csvCell, csvText } from '../../app/lib/export';

/** OWASP CSV injection rule on every exported text cell, RFC 4180 quoting, numbers left as numbers. */
describe('CSV export', () => {
  it('neutralises text a spreadsheet would run as a formula (=, +, -, @, tab, CR) with a leading quote', () => {
    expect(csvCell('=SUM(A1:A9)')).toBe(`"'=SUM(A1:A9)"`);
    expect(csvCell('+1')).toBe(`"'+1"`);
    expect(csvCell('-')).toBe(`"'-"`);
    expect(csvCell('@cmd')).toBe(`"'@cmd"`);
    expect(csvCell('\tx')).toBe(`"'\tx"`);
    expect(csvCell('\r=1')).toBe(`"'\r=1"`);
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe(`"'=HYPERLINK(""http://x"",""y"")"`);
  });
  it('quotes commas, quotes, line breaks and edge spaces; leaves plain text and numbers bare', () => {
    expect(csvCell(' Tom')).toBe('" Tom"');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"');
    expect(csvCell('Lily')).toBe('Lily');
    expect(csvCell(-1.5)).toBe('-1.5');
    expect(csvCell(0)).toBe('0');
  });
  it('escapes every text cell of a generation table (header and body), CRLF line ends', () => {
    const text = csvText([['run', 'step', 'token', 'margin'], ['unsteered', 0, '=1+1', -0.25], ['steered', 1, '-', 2]]);
    expect(text).toBe(`run,step,token,margin\r\nunsteered,0,"'=1+1",-0.25\r\nsteered,1,"'-",2\r\n`);
  });
});
