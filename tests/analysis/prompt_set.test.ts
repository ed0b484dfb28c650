import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseLabelledSet } from '../../workers/engine/io/prompt_set';

describe('labelled prompt sets (JSON, JSONL, CSV)', () => {
  it('JSON {positive, negative} with classes and position (the shipped example)', () => {
    const s = parseLabelledSet('he_she.json', fs.readFileSync('public/probes/he_she.json', 'utf8'));
    expect(s.positive).toHaveLength(24);
    expect(s.negative).toHaveLength(24);
    expect(s.classes).toEqual(['girl', 'boy']);
    expect(s.position).toBe('last');
    expect(s.positive[0]).toBe('Tom went to the park. Then');
  });

  it('CSV: quoted commas and quotes, header case, 1/0 labels (1 = positive whatever comes first)', () => {
    const csv = 'Text,Label\r\n"Tom, the boy, ran",1\r\n"She said ""hi""",0\r\nBen sat,1\r\n';
    const s = parseLabelledSet('set.csv', csv);
    expect(s.positive).toEqual(['Tom, the boy, ran', 'Ben sat']);
    expect(s.negative).toEqual(['She said "hi"']);
    expect(s.classes).toEqual(['0', '1']);
  });

  it('JSONL with named labels: the first label seen is the negative class', () => {
    const s = parseLabelledSet('x.jsonl', '{"text":"a","label":"cat"}\n\n{"text":"b","label":"dog"}\n{"text":"c","label":"cat"}\n');
    expect(s.classes).toEqual(['cat', 'dog']);
    expect(s.negative).toEqual(['a', 'c']);
    expect(s.positive).toEqual(['b']);
    expect(parseLabelledSet('x.jsonl', '{"text":"a","label":true}\n{"text":"b","label":false}').positive).toEqual(['a']);
  });

  it('says what is wrong: three labels, missing columns, bad JSON lines, unknown formats', () => {
    expect(() => parseLabelledSet('s.csv', 'text,label\na,x\nb,y\nc,z\n')).toThrow(/exactly two labels; found 3/);
    expect(() => parseLabelledSet('s.csv', 'sentence,y\na,1\n')).toThrow(/"text".*"label" column.*"sentence", "y"/);
    expect(() => parseLabelledSet('s.jsonl', '{"text":"a","label":1}\n{oops}\n')).toThrow(/s\.jsonl line 2: not valid JSON/);
    expect(() => parseLabelledSet('s.json', '{"positive":["a"]}')).toThrow(/expected \{"positive"/);
    expect(() => parseLabelledSet('s.txt', 'a')).toThrow(/unknown set format/);
  });
});
