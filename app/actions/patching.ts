import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { PatchingRequest, Progress } from '../../workers/protocol';
import type { InterventionDraft } from '../store/steering';
import { futureInput } from '../lib/futures';
import { runJob } from './job';
import { inOrder } from './worker';
import { currentIdentity } from './identity';
import { sameTurn, turnOf } from '../lib/stale';
import { chatTurnOf } from '../lib/experiment_request';
import { EXAMPLE_FUTURES, EXAMPLE_PAIR, followingPair, promptMismatch } from '../lib/patching_prompts';

/**
 * Runs the activation-patching grid as set up in its view (DESIGN.md §3), with the experiment's
 * futures and chat-template setting. Progress counts patched runs; Cancel stops it
 * between them and keeps the previous grid on display.
 */
export async function runPatching(): Promise<void> {
  await runJob('patching', 'Activation patching', 'Could not run activation patching', async () => {
    const s = useStore.getState();
    const set = s.patchingSettings;
    if (set.clean.trim() === '') throw new Error('type a clean prompt (the one whose behaviour is measured)');
    if (set.corrupt.trim() === '') throw new Error('type a corrupted prompt (the clean prompt with the decisive words changed, same token length)');
    if (set.corrupt === set.clean) throw new Error('the corrupted prompt is the clean one: change the words that carry the answer (same token length), or there is nothing to patch');
    const req: PatchingRequest = {
      clean: set.clean, corrupt: set.corrupt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking,
      good: futureInput(s.good), bad: futureInput(s.bad), hook: set.hook, direction: set.direction, metric: set.metric,
    };
    s.setJobSteps({ done: 0, total: 1 });
    const onProgress = Comlink.proxy((p: Progress) => useStore.getState().setJobSteps(p));
    const result = await inOrder((w) => w.patching(req, onProgress));
    useStore.getState().setPatching({ result, modelLabel: s.modelLabel ?? '', computedWith: currentIdentity(), clean: set.clean, corrupt: set.corrupt, ...turnOf(s), good: s.good, bad: s.bad });
  }, { cancellable: true });
}

/**
 * While the pair follows the experiment (store patchingFollowsPrompt: not edited by the user yet),
 * makes the experiment's prompt its clean prompt when it is neither prompt of the pair (an
 * experiment loaded from a link or file, or typed): lib/patching_prompts.ts followingPair. The
 * corrupted prompt counts as agreeing, as in promptMismatch: opening a patch cell makes it the
 * experiment's prompt. @returns whether the pair changed.
 */
export function followExperimentPrompt(): boolean {
  const s = useStore.getState();
  const set = s.patchingSettings;
  if (!s.patchingFollowsPrompt || !promptMismatch(s.prompt, set.clean, set.corrupt)) return false;
  const pair = followingPair(s.prompt);
  s.setPatchingSettings({ clean: pair.clean, corrupt: pair.corrupt });
  return true;
}

/**
 * README's example (Lily/Tom → dad), chosen by the user: the pair AND the experiment's futures
 * (" Tom" vs " Lily": the example's numbers hold for them only), in one update; the pair stops
 * following the experiment. @returns the line the view shows: what was set, and the futures replaced.
 */
export function pickExamplePair(): string {
  const s = useStore.getState();
  const was = `“${s.good.value}” vs “${s.bad.value}”`;
  const changed = s.good.mode !== 'text' || s.bad.mode !== 'text' || s.good.value !== EXAMPLE_FUTURES.good.value || s.bad.value !== EXAMPLE_FUTURES.bad.value;
  useStore.setState({
    patchingSettings: { ...s.patchingSettings, ...EXAMPLE_PAIR }, patchingFollowsPrompt: false,
    good: { ...EXAMPLE_FUTURES.good }, bad: { ...EXAMPLE_FUTURES.bad },
  });
  const now = `“${EXAMPLE_FUTURES.good.value}” vs “${EXAMPLE_FUTURES.bad.value}”`;
  return `Example: the README’s pair, and the experiment’s futures set to ${now}${changed ? ` (they were ${was})` : ''}.`;
}

/**
 * Opens one cell of the grid on display as an intervention: a `patch` at that hook and position
 * (or head, at every position; 'all': the whole layer) whose source is the other prompt. The run it belongs to is the
 * patched prompt — the corrupted one when denoising — so the experiment's prompt becomes that
 * prompt, in the grid's chat turn (template, system prompt, tools); the futures stay. The intervention is added at the end of the list and opened in the editor.
 * @returns what changed, for the view to say; null when no grid is on display.
 */
export function openPatchCell(layer: number, col: number | 'all'): { id: number; promptChanged: boolean; text: string } | null {
  const s = useStore.getState();
  const p = s.patching;
  if (!p) return null;
  const r = p.result;
  const [run, source] = r.direction === 'denoise' ? [p.corrupt, p.clean] : [p.clean, p.corrupt];
  const hook = r.hookTemplate.replace('{l}', String(layer));
  const heads = r.columns === 'head';
  const draft: Omit<InterventionDraft, 'id'> = {
    enabled: true, hook, type: 'patch', dose: 1, rotateBy: 'theta', mode: 'project', vectorId: null,
    source, head: heads && col !== 'all' ? col : null, positions: heads || col === 'all' ? 'all' : [col], steps: null,
  };
  const promptChanged = s.prompt !== run || !sameTurn(s, p);
  if (promptChanged) useStore.setState({ prompt: run, ...chatTurnOf(p) });
  const id = s.addIntervention(draft);
  const where = col === 'all' ? 'every position' : heads ? `head ${col}, every position` : `position ${col}`;
  return { id, promptChanged, text: `patch ${hook} (${where}) from the ${r.direction === 'denoise' ? 'clean' : 'corrupted'} prompt` };
}
