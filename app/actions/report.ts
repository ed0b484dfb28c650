import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { ReportPrompt, ReportProgress, ReportRequest } from '../../workers/protocol';
import { futureInput } from '../lib/futures';
import { runJob } from './job';
import { inOrder } from './worker';

/**
 * Prompt pairs typed one per line as "clean | corrupted" (a line without "|" is a clean prompt
 * read by the lens only). @throws Error naming the line of a pair with an empty side.
 */
export function parsePromptPairs(text: string): ReportPrompt[] {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).map((line, i) => {
    const parts = line.split('|').map((x) => x.trim());
    if (parts.length > 2 || parts.some((x) => x === '')) throw new Error(`prompt set, line ${i + 1}: write "clean prompt | corrupted prompt" (got "${line}")`);
    return { clean: parts[0], corrupt: parts[1] ?? null };
  });
}

/**
 * Runs the decision-point report (DESIGN.md §3) on the Patching view's prompts and the experiment's
 * futures; progress counts stages (lens and patching per prompt); Cancel keeps the previous report.
 */
export async function runReport(): Promise<void> {
  await runJob('report', 'Decision-point report', 'Could not build the decision-point report', async () => {
    const s = useStore.getState();
    const { clean, corrupt } = s.patchingSettings;
    const set = parsePromptPairs(s.reportSettings.set);
    const req: ReportRequest = {
      clean, corrupt, chatTemplate: s.chatTemplate, good: futureInput(s.good), bad: futureInput(s.bad),
      threshold: s.reportSettings.threshold, ...(set.length ? { set } : {}),
    };
    s.setJobSteps({ done: 0, total: 2 * (1 + set.length) });
    const onProgress = Comlink.proxy((p: ReportProgress) => useStore.getState().setJobSteps(p));
    const result = await inOrder((w) => w.report(req, onProgress));
    useStore.getState().setReport({ result, modelLabel: s.modelLabel ?? '', clean, corrupt, good: s.good.value, bad: s.bad.value });
  }, { cancellable: true });
}
