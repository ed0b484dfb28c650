import type { FutureDraft } from '../store/experiment';

/** A future as the user typed it → the engine's FutureInput (text as is; ids "274 287 | 317"). @throws Error for a bad id list. */
export { futureInput } from '../../workers/shared';

/** Identifies a future as written after a prompt: chips resolved for another key are out of date. */
export function futureKey(p: { prompt: string; chatTemplate: boolean; system?: string; tools?: readonly unknown[]; enableThinking?: boolean }, d: FutureDraft): string {
  return JSON.stringify([p.prompt, p.chatTemplate, p.system ?? null, p.tools ?? [], p.enableThinking ?? null, d.mode, d.value]);
}
