import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { spanFaithfulness, type SpanSetRow } from '../../workers/engine/studies/span_faithfulness';
import { tokenAttribution } from '../../workers/engine/studies/integrated_gradients';
import { bootstrapMean } from '../../workers/engine/analysis/bootstrap';
import { parseSpanSet } from '../../workers/engine/io/span_set';
import { logSoftmax } from '../reference_math';
import { sharedPath } from '../shared';

/**
 * Span faithfulness (studies/span_faithfulness.ts) on stories260K against an independent computation
 * in the test: each curve point is a plain forward of the edited token ids through Engine.run, its
 * margin from the reference log-softmax (tests/reference_math.ts), the spans ranked here; over a
 * set of the distractor study's prompts, the means and intervals are those of the per-prompt numbers
 * recomputed here one prompt at a time.
 */
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); }, 120_000);
afterAll(() => e.dispose());

const distractor = (n: number) => `Lily and Tom went to the park.${[' Ben played with a dog.', ' Ben saw a big tree.', ' Ben ate a red apple.'].slice(0, n).join('')} Lily gave the ball to`;
const spans = [{ label: 'evidence', text: ' Tom' }, { label: 'distractor', text: ' Ben' }, { label: 'giver', text: ' Lily gave' }];

/** Δ of the first tokens of the futures after `ids`, by a plain forward and the reference log-softmax. */
async function margin(ids: number[], good: number, bad: number): Promise<number> {
  const out = await e.run(ids, { logits: 'last' });
  const lp = logSoftmax(out.logits);
  return lp[good] - lp[bad];
}

describe('span faithfulness', () => {
  it('one prompt, grad × input: span values are the sums of the token map; deletion / insertion equal plain forwards of the edited ids', async () => {
    const prompt = distractor(1);
    const r = await spanFaithfulness(e, { rows: [{ prompt, spans }], good: ' Tom', bad: ' Ben', methods: ['grad_x_input'] });
    const p = r.prompts[0], m = p.methods[0];
    const ids = e.encodePrompt({ prompt });
    const good = e.encodePrompt({ prompt: prompt + ' Tom' }).slice(ids.length)[0], bad = e.encodePrompt({ prompt: prompt + ' Ben' }).slice(ids.length)[0];
    const a = (await tokenAttribution(e, { prompt, good: { text: ' Tom' }, bad: { text: ' Ben' }, method: 'grad_x_input' })).attribution;
    p.spans.forEach((s, i) => {
      expect(p.tokens.slice(s.start, s.end).join('')).toBe(spans[i].text);
      let v = 0; for (let t = s.start; t < s.end; t++) v += a[t];
      expect(m.values[i]).toBeCloseTo(v, 6);
    });
    const order = p.spans.map((_, i) => i).sort((x, y) => m.values[y] - m.values[x]);
    expect(m.order).toEqual(order);
    const bos = e.spec.bosTokenId ?? 0;
    expect(r.baselineId).toBe(bos);
    for (let k = 0; k <= p.spans.length; k++) {
      const del = [...ids], ins = [...ids];
      order.forEach((si, rank) => { for (let t = p.spans[si].start; t < p.spans[si].end; t++) (rank < k ? del : ins)[t] = bos; });
      expect(Math.abs(m.deletion[k] - await margin(del, good, bad)), `deletion k=${k}`).toBeLessThan(1e-4);
      expect(Math.abs(m.insertion[k] - await margin(ins, good, bad)), `insertion k=${k}`).toBeLessThan(1e-4);
    }
    expect(m.deletionArea).toBeCloseTo(m.deletion.reduce((s, x) => s + x, 0) / m.deletion.length, 10);
    console.log(`grad×input spans ${m.values.map((v) => v.toFixed(3)).join(' / ')}; deletion ${m.deletion.map((v) => v.toFixed(3)).join(' ')}`);
  }, 120_000);

  it('a set of the distractor study’s prompts: means and bootstrap intervals of what each prompt gives alone, per method', async () => {
    const rows: SpanSetRow[] = [1, 2, 3].map((n) => ({ prompt: distractor(n), spans }));
    const req = { good: ' Tom', bad: ' Ben', methods: ['flow', 'grad_x_input'] as ('flow' | 'grad_x_input')[], bootstrap: { resamples: 500, seed: 3 } };
    const set = await spanFaithfulness(e, { ...req, rows });
    const alone = await Promise.all(rows.map(async (row) => (await spanFaithfulness(e, { ...req, rows: [row] })).prompts[0]));
    expect(set.labels).toEqual(['evidence', 'distractor', 'giver']);
    set.summary.forEach((s, mi) => {
      for (let j = 0; j < set.labels.length; j++) {
        const xs = alone.map((p) => p.methods[mi].values[j]);
        const want = bootstrapMean(xs, { resamples: 500, seed: 3 + j });
        expect(s.values[j].n).toBe(3);
        expect(s.values[j].mean).toBeCloseTo(xs.reduce((a, b) => a + b, 0) / 3, 9);
        expect([s.values[j].lo, s.values[j].hi]).toEqual([want.lo, want.hi]);
        expect(s.values[j].lo).toBeLessThanOrEqual(s.values[j].mean);
        expect(s.values[j].hi).toBeGreaterThanOrEqual(s.values[j].mean);
      }
      for (let k = 0; k < set.k.length; k++) expect(s.deletion[k].mean).toBeCloseTo(alone.reduce((a, p) => a + p.methods[mi].deletion[k], 0) / 3, 9);
      console.log(`${s.method}: evidence ${s.values[0].mean.toFixed(3)} [${s.values[0].lo.toFixed(3)}, ${s.values[0].hi.toFixed(3)}], distractor ${s.values[1].mean.toFixed(3)}; deletion area ${s.deletionArea.mean.toFixed(3)}`);
    });
  }, 180_000);

  it('refuses before running: span labels that differ between prompts, a text no run of tokens spells, a file with an unknown key', async () => {
    await expect(spanFaithfulness(e, { rows: [{ prompt: distractor(1), spans }, { prompt: distractor(2), spans: spans.slice(0, 2) }], good: ' Tom', bad: ' Ben', methods: ['flow'] }))
      .rejects.toThrow(/prompt 2 of the set: spans .* same span labels in the same order/);
    await expect(spanFaithfulness(e, { rows: [{ prompt: distractor(1), spans: [{ label: 'x', text: ' Zebra' }] }], good: ' Tom', bad: ' Ben', methods: ['flow'] }))
      .rejects.toThrow(/" Zebra" is not a run of whole tokens/);
    await expect(spanFaithfulness(e, { rows: [{ prompt: distractor(1), spans }], methods: ['flow'] })).rejects.toThrow(/no good future/);
    expect(() => parseSpanSet('set.jsonl', '{"prompt": "a", "spans": [{"label": "x", "start": 0, "end": 1}], "goood": " b"}\n')).toThrow(/line 1: unknown key "goood"/);
    expect(() => parseSpanSet('set.json', '[{"prompt": "a", "spans": [{"label": "x", "start": 0}]}]')).toThrow(/entry 1, span 1: "start" and "end" must be whole/);
    expect(parseSpanSet('set.jsonl', '{"prompt": "a b", "good": " c", "spans": [{"label": "x", "text": " b"}]}\n\n')).toEqual([{ prompt: 'a b', good: ' c', spans: [{ label: 'x', text: ' b' }] }]);
  }, 60_000);
});
