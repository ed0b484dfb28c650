import { useStore } from '../store';

/**
 * One line under the prompt when the experiment holds a system prompt or tools (from a
 * chat-template session, a saved file or a link) that the prompt does not use: the chat template
 * is off, or the model's tokenizer has none, and the engine then reads the prompt text alone
 * (engine/prompt.ts). They are kept (switching the template on uses them again) unless the user
 * presses Clear. Nothing is shown while they are used or when there are none.
 */
export function UnusedChatFields({ used }: { used: boolean }) {
  const system = useStore((s) => s.system);
  const tools = useStore((s) => s.tools);
  if (used || (!system && !tools.length)) return null;
  const parts = [system ? 'a system prompt' : '', tools.length ? `${tools.length} tool${tools.length > 1 ? 's' : ''}` : ''].filter(Boolean).join(' and ');
  const clear = () => { const s = useStore.getState(); s.setSystem(undefined); s.setTools([]); };
  return (
    <p className="order-note" data-testid="unused-chat-fields">
      This experiment holds {parts} from a chat-template session: not used while the chat template is off.{' '}
      <button type="button" className="small" data-testid="unused-chat-fields-clear" onClick={clear}>Clear</button>
    </p>
  );
}
