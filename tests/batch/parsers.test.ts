import { describe, expect, it } from 'vitest';
import { formatOfName, parseValues, sniffFormat } from '../../workers/engine/studies/batch/values';
import { expandStudy, fill, parseTemplate, templateVariables } from '../../workers/engine/studies/batch/template';
import { bootstrapMean } from '../../workers/engine/analysis/bootstrap';
import { lensVisibleLayer, parseMetrics } from '../../workers/engine/studies/batch/metrics';
import { summarize } from '../../workers/engine/studies/batch/aggregate';
import type { BatchRow } from '../../workers/engine/studies/batch/batch';

describe('values tables', () => {
  it('CSV follows RFC 4180: quoted commas, doubled quotes, newlines inside quotes, a BOM, CRLF', () => {
    const t = parseValues('\uFEFFname,text\r\nTom,"a, b"\r\nLily,"say ""hi""\nthen"\r\n', 'csv');
    expect(t.columns).toEqual(['name', 'text']);
    expect(t.rows).toEqual([{ name: 'Tom', text: 'a, b' }, { name: 'Lily', text: 'say "hi"\nthen' }]);
  });
  it('JSON Lines and JSON arrays keep numbers as text; TSV is sniffed from tabs', () => {
    expect(parseValues('{"n": 0, "d": ""}\n\n{"n": 2, "d": " x"}\n').rows).toEqual([{ n: '0', d: '' }, { n: '2', d: ' x' }]);
    expect(parseValues('[{"a": true}]').rows).toEqual([{ a: 'true' }]);
    expect(sniffFormat('a\tb\n1\t2')).toBe('tsv');
    expect(parseValues('a\tb\n1\t2').rows).toEqual([{ a: '1', b: '2' }]);
    expect(formatOfName('x.NDJSON')).toBe('jsonl');
    expect(formatOfName('x.txt')).toBeNull();
  });
  it('bad tables fail naming the line or row', () => {
    expect(() => parseValues('{"a": 1}\n{"a": }\n')).toThrow(/line 2: not valid JSON/);
    expect(() => parseValues('{"a": {"b": 1}}')).toThrow(/line 1: "a" is object/);
    expect(() => parseValues('a,b\n1,2,3\n', 'csv')).toThrow(/row 1: 3 cells but the header names 2/);
    expect(() => parseValues('a,b\n', 'csv')).toThrow(/no rows/);
    expect(() => parseValues('{"a": 1}', 'json')).toThrow(/array of objects/);
  });
});

describe('templates', () => {
  it('fills {variables}, keeps {{ }} as braces, and lists the variables in order', () => {
    expect(fill('{a} and {b} {{x}}', { a: 'Tom', b: 'Lily' })).toBe('Tom and Lily {x}');
    expect(templateVariables('{a}{b}{a}')).toEqual(['a', 'b']);
    expect(() => fill('{c}', { a: '1' })).toThrow(/\{c\} has no column/);
  });
  it('expands a study row by row, futures included, and refuses a variable without a column before running', () => {
    const t = parseTemplate('{"prompt": "{a} gave it to", "good": " {b}", "bad": " {a}", "x": "a"}');
    const ps = expandStudy(t, { columns: ['a', 'b'], rows: [{ a: 'Lily', b: 'Tom' }] });
    expect(ps[0]).toMatchObject({ index: 0, prompt: 'Lily gave it to', good: ' Tom', bad: ' Lily' });
    expect(() => expandStudy({ ...t, good: ' {c}' }, { columns: ['a', 'b'], rows: [{ a: '', b: '' }] })).toThrow(/good future: \{c\} has no column/);
    expect(() => expandStudy(t, { columns: ['a', 'b'], rows: [{ a: 'x', b: '' }] })).not.toThrow();
    expect(() => parseTemplate('{"prompt": "x"}')).toThrow(/"good" must be non-empty text/);
    expect(() => parseTemplate('nope')).toThrow(/not valid JSON/);
  });
});

describe('statistics', () => {
  it('bootstrap: a constant sample has a zero-width interval; one value is its own interval; nulls are left out', () => {
    expect(bootstrapMean([2, 2, 2, null])).toEqual({ n: 3, mean: 2, lo: 2, hi: 2 });
    expect(bootstrapMean([5])).toEqual({ n: 1, mean: 5, lo: 5, hi: 5 });
    expect(bootstrapMean([]).n).toBe(0);
  });
  it('bootstrap: the 95 % interval of a large sample is mean ± 1.96·s/√n (normal approximation, within 10 %)', () => {
    let a = 1;
    const xs = Array.from({ length: 400 }, () => { a = (a * 48271) % 2147483647; return a / 2147483647; }); // uniform(0, 1)
    const r = bootstrapMean(xs, { resamples: 4000 });
    const m = xs.reduce((s, x) => s + x, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1));
    const half = 1.96 * sd / Math.sqrt(xs.length);
    expect(r.mean).toBeCloseTo(m, 12);
    expect(Math.abs((r.hi - r.lo) / 2 - half) / half).toBeLessThan(0.1);
    expect(bootstrapMean(xs)).toEqual(bootstrapMean(xs));
  });
  it('summaries group by a numeric variable in numeric order and skip rows with errors', () => {
    const row = (n: string, v: number, error?: string): BatchRow => ({ index: 0, vars: { n }, prompt: '', good: '', bad: '', goodMode: 'text', badMode: 'text', nTokens: 1, metrics: { final_margin: v }, ...(error ? { error } : {}) });
    const s = summarize([row('10', 1), row('2', 3), row('2', 5), row('10', 100, 'too long')], ['final_margin'], 'n');
    expect(s.groups.map((g) => [g.value, g.x, g.stats.final_margin!.mean])).toEqual([['2', 2, 4], ['10', 10, 1]]);
    expect(() => summarize([row('1', 1)], ['final_margin'], 'm')).toThrow(/not a variable/);
  });
  it('lens-visibility layer: the first row from which the sign is final and |Δ| stays above the threshold', () => {
    // rows 0..3, one position: Δ = [2, -0.5, 1.5, 3] → from row 2 on positive and ≥ 1
    expect(lensVisibleLayer(Float32Array.from([2, -0.5, 1.5, 3]), 3, 1, 0, 1)).toBe(2);
    expect(lensVisibleLayer(Float32Array.from([2, 1, 1.5, 3]), 3, 1, 0, 1)).toBe(0);
    expect(lensVisibleLayer(Float32Array.from([2, 1, 1.5, 0.5]), 3, 1, 0, 1)).toBeNull();
    expect(parseMetrics('all')).toEqual(['final_margin', 'sequence_margin', 'lens_visible_layer', 'sink_rate', 'probe_score', 'patch_recovery']);
    expect(() => parseMetrics('final_margin,probe')).toThrow(/unknown metric "probe"/);
  });
});
