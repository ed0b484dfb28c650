import { useEffect, useState } from 'react';
import { useStore } from '../store';
import { toolsInput } from '../../workers/shared';

/** The tools as the editor writes them: pretty JSON, [] for none. */
const toolsText = (tools: readonly unknown[]) => (tools.length ? JSON.stringify(tools, null, 2) : '[]');

/**
 * With the chat template on: the system prompt before the user turn, and the tools offered (a JSON
 * list, apply_chat_template's `tools`). The tool list is checked as it is typed (experiment.ts
 * toolsInput) and reaches the experiment only when valid; while it is not, the message says what is
 * wrong and the experiment keeps its last valid list. The enable_thinking box is enabled only when
 * the loaded chat template reads that variable (ModelInfo.templateReadsThinking), and says why not.
 */
export function ChatTurnEditor() {
  const system = useStore((s) => s.system);
  const tools = useStore((s) => s.tools);
  const setSystem = useStore((s) => s.setSystem);
  const setTools = useStore((s) => s.setTools);
  const enableThinking = useStore((s) => s.enableThinking);
  const setEnableThinking = useStore((s) => s.setEnableThinking);
  const readsThinking = useStore((s) => s.info?.templateReadsThinking ?? false);
  const [draft, setDraft] = useState(() => toolsText(tools));
  const [problem, setProblem] = useState<string | null>(null);
  // an experiment opened or a study row loaded replaces the list: show it (unless it is what is typed)
  useEffect(() => {
    setDraft((d) => {
      try { if (JSON.stringify(toolsInput(JSON.parse(d), 'tools')) === JSON.stringify(tools)) return d; } catch { /* the draft is not valid: replace it */ }
      return toolsText(tools);
    });
    setProblem(null);
  }, [tools]);
  const edit = (text: string) => {
    setDraft(text);
    let json: unknown;
    try {
      json = JSON.parse(text.trim() === '' ? '[]' : text);
    } catch (e) {
      setProblem(`tools: not valid JSON (${(e as Error).message}); the experiment keeps its last valid list`);
      return;
    }
    try {
      setTools(toolsInput(json, 'tools'));
      setProblem(null);
    } catch (e) {
      setProblem(`${(e as Error).message}; the experiment keeps its last valid list`);
    }
  };
  return (
    <fieldset className="chat-turn" data-testid="chat-turn">
      {/* a short legend: a long one wrapped and broke the box's top border */}
      <legend>Chat turn</legend>
      <p className="hint">System prompt and tools, rendered by the chat template.</p>
      <label htmlFor="system-prompt">System prompt</label>
      <textarea id="system-prompt" data-testid="system-prompt" rows={2} spellCheck={false} placeholder="none" value={system ?? ''} onChange={(e) => setSystem(e.target.value)} />
      <label htmlFor="tools-json">Tools</label>
      <p className="hint">A JSON list of {'{"type": "function", "function": {"name", "description", "parameters"}}'}; a tool-call future names one.</p>
      <textarea id="tools-json" data-testid="tools-json" rows={4} spellCheck={false} value={draft} aria-invalid={problem ? true : undefined} onChange={(e) => edit(e.target.value)} />
      {problem && <p className="note" role="alert" data-testid="tools-problem">{problem}</p>}
      <label className="toggle">
        <input type="checkbox" data-testid="enable-thinking" checked={enableThinking ?? true} disabled={!readsThinking} onChange={(e) => setEnableThinking(e.target.checked)} />
        {/* one flex item: the label's text and the variable's name wrap together */}
        <span>Let the model think (<code>enable_thinking</code>)</span>
      </label>
      <p className="hint" data-testid="enable-thinking-hint">
        {readsThinking
          ? `Off renders the empty <think></think> block after the generation prompt, so the answer starts at once${enableThinking === undefined ? '; not set: the template\'s default' : ''}.`
          : 'This model\'s chat template does not read enable_thinking (Qwen3\'s does), so the setting would change nothing.'}
      </p>
    </fieldset>
  );
}
