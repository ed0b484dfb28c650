import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main, parseCommandLine } from '../../cli/main';
import { makeQwen3VocabModel } from '../tokenizers/qwen3_vocab_model';

/**
 * The runner's chat turn (cli/chat_turn.ts): --system, --tools FILE.json and tool-call futures in
 * --good/--bad, refused before any model work when they do not fit together, and run on the
 * Qwen3-vocabulary model where the bad future's tokens spell the call as Qwen3's template writes it
 * (written here by hand).
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
});
