import * as fs from 'node:fs';
import * as path from 'node:path';
import * as Comlink from 'comlink';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchRow, BranchTokenEvent, InferenceApi, Progress } from '../../workers/protocol';
import { parseTemplate } from '../../workers/engine/studies/batch/template';
import { parseValues } from '../../workers/engine/studies/batch/values';
import { realModel } from '../reference_math';
import { inProcessWorker } from './in_process';

/**
 * The branch explorer and batch methods of the worker protocol through Comlink: streaming
 * callbacks, cancel keeping partial results, errors crossing the boundary with their messages.
 */
const m = realModel('stories260K');
const lily = m.ref.prompts[1];
const STUDIES = path.join(__dirname, '..', '..', 'public', 'studies');
let api: Comlink.Remote<InferenceApi>;
let close: () => void;
beforeAll(async () => {
  ({ api, close } = await inProcessWorker());
  const files = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'];
  await api.load({ kind: 'files', label: 'stories260K', files: files.map((f) => ({ path: `stories260K/${f}`, file: new Blob([fs.readFileSync(path.join(m.dir, f))]) })) }, 'cpu');
});
afterAll(() => close());

const GREEDY = { temperature: 0, topK: 0, seed: 0, steered: false };

describe('branch methods', () => {
  it('branchStart streams the trunk; branchFork adds a node that computed only its own positions; branchLens answers per layer', async () => {
    const events: BranchTokenEvent[] = [];
    await expect(api.branchFork({ from: 0, position: 3, tokenId: 5 }, GREEDY)).rejects.toThrow(/no branch tree/);
    const tree = await api.branchStart({ prompt: lily.prompt, good: { text: ' Tom' }, bad: { text: ' Lily' }, maxNewTokens: 10 }, GREEDY, Comlink.proxy((e: BranchTokenEvent) => { events.push(e); }));
    expect(tree.nodes[0].ids).toEqual(lily.greedy_ids.slice(0, 10));
    await new Promise((r) => setTimeout(r, 50)); // callbacks travel on their own channel: let the last one arrive
    expect(events.map((e) => e.id)).toEqual(tree.nodes[0].ids);
    const T = lily.n_prompt;
    const alt = tree.nodes[0].top[2].ids[1];
    const lens = await api.branchLens(0, T + 2, [alt]);
    expect(lens.margins[0]).toHaveLength(6);
    const after = await api.branchFork({ from: 0, position: T + 2, tokenId: alt }, GREEDY);
    expect(after.nodes).toHaveLength(2);
    expect(after.nodes[1]).toMatchObject({ parent: 0, start: T + 2, forwarded: 10 - 2 - 1 });
    expect(after.nodes[1].ids[0]).toBe(alt);
    await expect(api.branchFork({ from: 0, position: T + 2, tokenId: tree.nodes[0].ids[2] }, GREEDY)).rejects.toThrow(/already the token/);
  });

  it('branchRestore reopens an exported tree and refuses a file that is not one', async () => {
    const tree = await api.branchStart({ prompt: 'Once upon a time', good: { text: ' there' }, bad: { text: ' the' }, maxNewTokens: 4 }, GREEDY);
    const json = JSON.parse(JSON.stringify(tree));
    expect((await api.branchRestore({ tree: json })).nodes[0].ids).toEqual(tree.nodes[0].ids);
    await expect(api.branchRestore({ tree: { version: 2 } })).rejects.toThrow(/not a Branchpoint branch tree/);
    await expect(api.branchRestore({ tree: { ...json, prompt: 'Lily and Tom' } })).rejects.toThrow(/tokenizes differently/);
    const r = await api.forkPoints({ samples: 1, horizon: 1 });
    expect(r.points).toHaveLength(4);
  });
});

describe('batch', () => {
  it('streams rows; cancel() stops between prompts and the rows done are returned', async () => {
    const template = parseTemplate(fs.readFileSync(path.join(STUDIES, 'name_swap.template.json'), 'utf8'));
    const values = parseValues(fs.readFileSync(path.join(STUDIES, 'name_swap.values.csv'), 'utf8'), 'csv');
    const rows: BatchRow[] = [];
    const r = await api.batch({ template, values, metrics: ['final_margin'] }, Comlink.proxy((row: BatchRow) => { rows.push(row); }),
      Comlink.proxy((p: Progress) => { if (p.done === 2) void api.cancel(); }));
    expect(r.cancelled).toBe(true);
    expect(r.rows.length).toBeGreaterThanOrEqual(2);
    expect(r.rows.length).toBeLessThan(values.rows.length);
    expect(rows.map((x) => x.index)).toEqual(r.rows.map((x) => x.index));
    await expect(api.batch({ template: { ...template, prompt: '{nobody}' }, values })).rejects.toThrow(/\{nobody\} has no column/);
  });
});
