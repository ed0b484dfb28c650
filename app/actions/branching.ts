import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { BranchTokenEvent, ExploreRequest, ForkProgress, SpecRequest } from '../../workers/protocol';
import { futureInput } from '../lib/futures';
import { specRequest } from '../lib/specs';
import { runJob } from './job';
import { inOrder } from './worker';
import { currentIdentity } from './identity';
import { decodeRate, forkSteps, forkWork, streamedRate, tokensWord, type ForkWork } from '../lib/fork_estimate';
import { pathOf } from '../../workers/shared';

/** The active interventions as specs, when the fork settings say to run under them. */
function steering(): SpecRequest {
  const s = useStore.getState();
  if (!s.forkDraw.steered) return {};
  const { specs, specLabels, applied } = specRequest(s.interventions, s.vectors);
  if (!applied.length) throw new Error('“with the interventions” is on, but no intervention is enabled: enable one in the steering panel or untick it');
  return { specs, specLabels };
}

/**
 * The progress bar takes a streamed tree's count at most this often (ms): redrawn for every token it
 * took the main thread often enough that, on 2 cores, the worker's forwards ran ~1.7× slower than
 * in a fork-points scan (which reports once per continuation), and the estimate timed by them
 * said ~2× the scan's real time.
 */
const PROGRESS_EVERY_MS = 100;

/**
 * Counts streamed tokens into the progress bar, and times them: `rate()` is this load's decode
 * speed as a fork-points continuation decodes (lib/fork_estimate.ts streamedRate).
 */
function tokenCounter(total: number) {
  let done = 0, shown = performance.now();
  const seconds: number[] = [];
  useStore.getState().setJobSteps({ done, total });
  const onToken = Comlink.proxy((e: BranchTokenEvent) => {
    seconds.push(e.seconds);
    done++;
    if (performance.now() - shown < PROGRESS_EVERY_MS) return;
    shown = performance.now();
    useStore.getState().setJobSteps({ done, total });
  });
  return { onToken, rate: () => streamedRate(currentIdentity(), seconds) };
}

/**
 * Starts a branch tree on the experiment's prompt and futures: the trunk is generated with the
 * generation settings (max new tokens) and the fork settings (greedy or seeded sampling, with or
 * without the interventions). Replaces the tree on display.
 */
export async function startTree(): Promise<void> {
  await runJob('branch', 'Generating the trunk', 'Could not generate the trunk', async () => {
    const s = useStore.getState();
    const req: ExploreRequest & SpecRequest = { prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, good: futureInput(s.good), bad: futureInput(s.bad), maxNewTokens: s.generation.maxNewTokens, ...steering() };
    const counter = tokenCounter(s.generation.maxNewTokens);
    const tree = await inOrder((w) => w.branchStart(req, s.forkDraw, counter.onToken));
    useStore.getState().setDecodeRate(counter.rate());
    useStore.getState().setTree(tree);
  }, { cancellable: true });
}

/** Forks at the picked site to `tokenId` and selects the new branch (it joins the comparison). */
export async function forkTo(tokenId: number): Promise<void> {
  const s = useStore.getState();
  const site = s.forkSite;
  if (!site || !s.tree) return;
  await runJob('branch', 'Generating the branch', 'Could not fork there', async () => {
    const steer = steering();
    const total = s.tree!.promptIds.length + s.tree!.maxNewTokens - site.position;
    const counter = tokenCounter(total);
    const tree = await inOrder((w) => w.branchFork({ from: site.node, position: site.position, tokenId, ...steer }, s.forkDraw, counter.onToken));
    useStore.getState().setDecodeRate(counter.rate());
    useStore.getState().setTree(tree, tree.nodes[tree.nodes.length - 1].id);
  }, { cancellable: true });
}

/** Picks the position to fork from and fetches the lens margins of its alternatives. */
export async function pickForkSite(node: number, position: number, alternatives: number[]): Promise<void> {
  useStore.getState().setForkSite({ node, position });
  if (!alternatives.length) return;
  await runJob('branch', 'Logit lens at the fork', 'Could not compute the lens margins there', async () => {
    const lens = await inOrder((w) => w.branchLens(node, position, alternatives));
    const now = useStore.getState().forkSite;
    if (now && now.node === node && now.position === position) useStore.getState().setForkLens(lens);
  });
}

/** The work Find fork points would do on the selected branch as set up now (lib/fork_estimate.ts). */
export function forkPointsWork(): ForkWork | null {
  const s = useStore.getState();
  if (!s.tree || !s.tree.nodes.some((n) => n.id === s.branchNode)) return null;
  const path = pathOf(s.tree, s.branchNode);
  return forkWork(path.top, s.tree.promptIds.length, s.tree.promptIds.length + s.tree.maxNewTokens, s.forkSamples, s.forkNearTiesOnly ? s.gapThreshold : 1);
}

/**
 * Scores the fork points of the selected branch's path: every new token, or only the near ties
 * (gap ≤ the slider) when so set (progress per continuation, with the tokens scored and the time left
 * in the estimate's units; Cancel keeps what is done).
 */
export async function findForkPoints(): Promise<void> {
  await runJob('forks', 'Finding fork points', 'Could not measure the fork points', async () => {
    const s = useStore.getState();
    const steer = steering();
    const work = forkPointsWork();
    const maxGap = s.forkNearTiesOnly ? s.gapThreshold : 1;
    // the units of the estimate from the start: continuations, token positions, tokens to score
    if (work) s.setJobSteps({ done: 0, total: work.continuations, work: { done: 0, total: work.tokens }, note: `0 of ${work.positions} ${tokensWord(work.positions, maxGap < 1)} scored` });
    const onProgress = Comlink.proxy((p: ForkProgress) => useStore.getState().setJobSteps(forkSteps(p, maxGap < 1)));
    const t0 = performance.now();
    const r = await inOrder((w) => w.forkPoints({ node: s.branchNode, samples: s.forkSamples, seed: s.forkDraw.seed, steered: s.forkDraw.steered, maxGap, ...steer }, onProgress));
    // this load's rate for the next estimate: the run's own, warm-up and overheads included
    if (work && !r.cancelled) useStore.getState().setDecodeRate(decodeRate(currentIdentity(), (performance.now() - t0) / 1000, work.tokens));
    useStore.getState().setForks(r);
  }, { cancellable: true });
}

/** Restores a tree from an exported JSON file. */
export async function restoreTree(file: File): Promise<void> {
  await runJob('branch', 'Opening the tree', `Could not open ${file.name}`, async () => {
    let data: unknown;
    try { data = JSON.parse(await file.text()); } catch (e) { throw new Error(`${file.name} is not JSON (${(e as Error).message})`); }
    const tree = await inOrder((w) => w.branchRestore({ tree: data, ...steering() }));
    useStore.getState().setTree(tree);
  });
}
