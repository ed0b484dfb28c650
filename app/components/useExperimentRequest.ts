import { useMemo } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useStore } from '../store';
import { chatTurnOf, experimentRequest, type ChatTurnFields, type ExperimentFields, type ExperimentRequest } from '../lib/experiment_request';

/** The experiment's fields as the store holds them at this render; the object changes only when one of them does. */
export function useExperimentFields(): ExperimentFields {
  return useStore(useShallow((s) => ({ prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, good: s.good, bad: s.bad, interventions: s.interventions, vectors: s.vectors })));
}

/** experimentRequest over the store at this render, or why it cannot be made (the error's message, shown instead of a crash). */
export function useExperimentRequest(): { request: ExperimentRequest; problem: null } | { request: undefined; problem: string } {
  const s = useExperimentFields();
  return useMemo(() => {
    try {
      return { request: experimentRequest(s), problem: null };
    } catch (e) {
      return { request: undefined, problem: (e as Error).message };
    }
  }, [s]);
}

/** The chat turn at this render; the object changes only when one of its fields does. */
export function useChatTurn(): ChatTurnFields {
  return useStore(useShallow(chatTurnOf));
}
