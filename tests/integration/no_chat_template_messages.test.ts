import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/main';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { sharedPath } from '../shared';

/**
 * A model with no chat template (stories260K: its tokenizer_config.json has no chat_template). A
 * fresh-user trial met two refusals that told it to use a control it could not use: a tool-call
 * future said "switch the chat-template toggle on" while the app had that toggle off and disabled
 * for this model; the runner's --chat-template true said "switch the chat-template toggle off".
 * The engine's refusal says the model has none and what to load; the runner's names its flag.
 */
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); });
afterAll(() => e.dispose());
afterEach(() => vi.restoreAllMocks());

describe('refusals on a model with no chat template', () => {
  it('a tool-call future says the model has no chat template and what to load, not to turn a toggle on', () => {
    expect(e.info().hasChatTemplate).toBe(false);
    const prompt = { prompt: 'Lily went to the park.', chatTemplate: false };
    const ids = e.encodePrompt(prompt);
    let message = '';
    try { e.prompts.resolveFuture(ids, { toolCall: { name: 'run_command', arguments: {} } }, prompt, 'bad'); } catch (err) { message = (err as Error).message; }
    expect(message).toMatch(/^the bad future is a tool call, which only a chat template writes, and stories260K[^:]* has none \(its tokenizer_config\.json has no chat_template\): load a chat model/);
    expect(message).not.toMatch(/toggle/);
  });

  it('the runner refuses --chat-template true naming the flag, not a toggle', async () => {
    const err: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    vi.spyOn(process.stderr, 'write').mockImplementation((s) => { err.push(String(s)); return true; });
    const code = await main(['margins', '--model', sharedPath('models', 'stories260K'), '--prompt', 'Lily went to the park.', '--good', ' She', '--bad', ' He', '--chat-template', 'true']);
    expect(code).toBe(1);
    const text = err.join('');
    expect(text).toMatch(/^error: --chat-template true: stories260K[^:]* has no chat template \(its tokenizer_config\.json has no chat_template\); leave the flag out/);
    expect(text).not.toMatch(/toggle/);
  });
});
