import type { SharedPrefix } from '../../workers/protocol';

/** One run's shared prefix (only its length is read), or none. */
type Prefix = Pick<SharedPrefix, 'ids'> | null | undefined;

/**
 * Where a first-token margin is read, in the words every caption uses: the decision point
 * (workers/engine/decision_point.ts), which is the last prompt token unless the futures open with
 * the same k tokens; then those k are teacher-forced after the prompt and the margin is read after
 * them (the last of the run's positions, prefix included).
 * @param shared the result's sharedPrefix; a list for a result over several prompts (Batch), whose
 *   prompts may differ: one text when they agree, else one that names both cases.
 * @returns e.g. "the decision point (the last prompt token)", "the decision point (after the shared prefix, 9 tokens)".
 */
export function decisionPointText(shared?: Prefix | readonly Prefix[]): string {
  const list: readonly Prefix[] = Array.isArray(shared) ? shared : [shared as Prefix];
  const lengths = new Set(list.map((s) => s?.ids.length ?? 0));
  if (lengths.size > 1) return 'the decision point (the last prompt token, or after the futures\' shared prefix where a prompt\'s futures share one)';
  const k = [...lengths][0] ?? 0;
  return k === 0 ? 'the decision point (the last prompt token)' : `the decision point (after the shared prefix, ${k} token${k === 1 ? '' : 's'})`;
}
