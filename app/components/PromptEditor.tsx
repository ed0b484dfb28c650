import { useEffect, useState } from 'react';
import { useStore } from '../store';
import { tokenizePrompt } from '../actions/analyse';
import { errorPlace } from '../lib/input_errors';
import { ChatTurnEditor } from './ChatTurnEditor';
import { UnusedChatFields } from './UnusedChatFields';

/** The prompt text and the chat-template toggle (off and explained when the tokenizer has no template). */
export function PromptEditor() {
  const prompt = useStore((s) => s.prompt);
  const setPrompt = useStore((s) => s.setPrompt);
  const chatTemplate = useStore((s) => s.chatTemplate);
  const setChatTemplate = useStore((s) => s.setChatTemplate);
  const system = useStore((s) => s.system);
  const tools = useStore((s) => s.tools);
  const enableThinking = useStore((s) => s.enableThinking);
  const info = useStore((s) => s.info);
  const [note, setNote] = useState<string | null>(null);
  const bannerWhy = useStore((s) => s.failure?.why ?? null);

  useEffect(() => {
    const t = setTimeout(() => void tokenizePrompt().then(setNote), 250);
    return () => clearTimeout(t);
  }, [prompt, chatTemplate, system, tools, enableThinking, info]);

  const hasTemplate = info?.hasChatTemplate ?? false;
  return (
    <div className="prompt-editor">
      <label htmlFor="prompt">Prompt</label>
      <textarea id="prompt" data-testid="prompt" rows={4} value={prompt} onChange={(e) => setPrompt(e.target.value)} spellCheck={false} />
      <label className="toggle" title={hasTemplate ? 'Wrap the prompt as a user turn with the tokenizer\'s chat template' : 'This model\'s tokenizer has no chat template'}>
        <input type="checkbox" data-testid="chat-template" checked={chatTemplate} disabled={!hasTemplate} onChange={(e) => setChatTemplate(e.target.checked)} />
        Chat template
      </label>
      {!hasTemplate && info && <span className="hint" data-testid="chat-template-why">{info.label}'s tokenizer has no chat template (an instruct model's has: system prompt, tools, tool-call futures)</span>}
      {chatTemplate && hasTemplate && <ChatTurnEditor />}
      <UnusedChatFields used={chatTemplate && hasTemplate} />
      {errorPlace(note, bannerWhy) === 'note' && <p className="note" role="alert" data-testid="prompt-note">{note}</p>}
    </div>
  );
}
