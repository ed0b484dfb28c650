/**
 * A study request's base from the experiment, as pure functions of the store's state (the hooks
 * over them are in components/useExperimentRequest.ts; actions that read the store once use these).
 */
import type { useStore } from '../store';
import { futureInput } from './futures';
import { specRequest } from './specs';
import type { FutureInput, PromptInput, SpecRequest } from '../../workers/protocol';

/** The experiment's fields a study request is made from (store: experiment, steering, vectors). */
export type ExperimentFields = Pick<ReturnType<typeof useStore.getState>, 'prompt' | 'chatTemplate' | 'system' | 'tools' | 'enableThinking' | 'good' | 'bad' | 'interventions' | 'vectors'>;

/** The part of a study request the experiment gives: the prompt as it renders, both futures, the enabled interventions as specs. */
export type ExperimentRequest = PromptInput & SpecRequest & { good: FutureInput; bad: FutureInput };

/**
 * The experiment as a request's base: prompt, chat template, system prompt, tools and enable_thinking, both futures
 * parsed, the enabled interventions as specs with their labels (lib/specs.ts specRequest).
 * @throws Error for a future that does not parse or an enabled intervention whose vector is no longer in the library.
 */
export function experimentRequest(s: ExperimentFields): ExperimentRequest {
  const { specs, specLabels } = specRequest(s.interventions, s.vectors);
  return { prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, good: futureInput(s.good), bad: futureInput(s.bad), specs, specLabels };
}

/** The experiment's chat turn: the chat template toggle, the system prompt, the tools and enable_thinking every prompt of a study request renders with. */
export type ChatTurnFields = Pick<ExperimentFields, 'chatTemplate' | 'system' | 'tools' | 'enableThinking'>;

/** The chat turn of the store's state `s` (for actions that read the store once). */
export function chatTurnOf(s: Omit<ChatTurnFields, 'enableThinking'> & { enableThinking?: boolean }): ChatTurnFields {
  return { chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking };
}
