import { useStore } from '../store';
import { keptAfterAnalyse } from '../store/share';
import type { AnalyseRequest } from '../../workers/protocol';
import { futureInput, futureKey } from '../lib/futures';
import type { FutureChips } from '../store/results';
import { specRequest } from '../lib/specs';
import { queueAfterJob, runJob } from './job';
import { analyseAction } from '../lib/job_rules';
import { inOrder, messageOf } from './worker';
import { currentIdentity } from './identity';
import { turnOf } from '../lib/stale';

/** The analysis request of the experiment as edited. @throws Error for a future that does not parse. */
function request(): AnalyseRequest {
  const s = useStore.getState();
  return { prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, good: futureInput(s.good), bad: futureInput(s.bad), sinkEps: s.sinkEps };
}

/**
 * Analyses the prompt (lens margins, sinks, norms) and puts the result on display. With enabled
 * interventions it analyses the prompt twice, without and then with them (the steered analysis is
 * shown; the unsteered one is kept for the difference). While another job runs the analysis is
 * queued (shown in the progress bar) and runs when that job ends, on the experiment as edited by
 * then (lib/job_rules.ts analyseAction); the result carries the inputs it was computed for.
 * @returns when the analysis (run now or queued) has finished.
 */
export async function analyse(): Promise<void> {
  const s = useStore.getState();
  const action = analyseAction(s.job, s.modelStatus === 'ready');
  if (action === 'queue') return queueAfterJob('Analyse', analyseNow);
  await analyseNow();
}

async function analyseNow(): Promise<void> {
  const label = useStore.getState().modelLabel ?? 'the model';
  const atStart = currentIdentity(); // '' while a load runs: the worker runs this after it, on that load
  await runJob('analyse', 'Analysing the prompt', 'Could not analyse the prompt', async () => {
    const req = request();
    const st = useStore.getState();
    const { specs, specLabels, applied } = specRequest(st.interventions, st.vectors);
    const baseline = applied.length ? await inOrder((w) => w.analyse(req)) : null;
    const analysis = await inOrder((w) => w.analyse(applied.length ? { ...req, specs, specLabels } : req));
    const s = useStore.getState();
    const computedWith = atStart || currentIdentity();
    s.setResult({ analysis, modelLabel: label, computedWith, prompt: req.prompt, ...turnOf(st), good: st.good, bad: st.bad, steering: applied, baseline });
    s.setPromptTokens({ ids: analysis.ids, tokens: analysis.tokens, prefix: analysis.sharedPrefix?.ids.length ?? 0 });
    s.setExperimentNotice(keptAfterAnalyse(s.experimentNotice, s.restoring));
    const h = s.selectedHead;
    if (h && h.layer < analysis.nLayers && h.head < analysis.nHeads) await fetchPattern(h.layer, h.head);
  });
}

/** Fetches one head's attention pattern from the analysis on display. */
export async function openPattern(layer: number, head: number): Promise<void> {
  useStore.getState().setSelectedHead({ layer, head });
  await runJob('pattern', `Attention pattern L${layer} H${head}`, `Could not compute the attention pattern of layer ${layer}, head ${head}`, () => fetchPattern(layer, head));
}

/**
 * Fetches every head's attention pattern of one layer (blocks.{layer}.attn.hook_pattern, [n_heads, T, T])
 * from the analysis on display, with its interventions, for the All heads panel.
 */
export async function openLayerPatterns(layer: number): Promise<void> {
  const r = useStore.getState().result;
  if (!r) return;
  const hook = `blocks.${layer}.attn.hook_pattern`;
  await runJob('pattern', `Attention patterns of ${hook}, every head`, `Could not compute the attention patterns of layer ${layer}`, async () => {
    const [c] = await inOrder((w) => w.activations([hook]));
    useStore.getState().setLayerPatterns({ layer, nHeads: r.analysis.nHeads, data: c.data });
  });
}

async function fetchPattern(layer: number, head: number): Promise<void> {
  const data = await inOrder((w) => w.pattern(layer, head));
  useStore.getState().setPattern({ layer, head, data });
}

let tokenizeTicket = 0;

/**
 * True when `shown` is an analysis of this very prompt whose futures' shared prefix ends it
 * (promptTokens.prefix): a tokenization answered after it (the worker runs calls in order) keeps
 * those tokens, so the strip still ends with the prefix the margins were read after.
 */
function sameBarePrompt(shown: { ids: number[]; prefix?: number } | null, ids: readonly number[]): boolean {
  const k = shown?.prefix ?? 0;
  return k > 0 && shown!.ids.length - k === ids.length && ids.every((id, i) => shown!.ids[i] === id);
}

/**
 * Tokenizes the prompt for the token strip (no job, no banner: while typing, a prompt that does not
 * tokenize just leaves the strip empty with the reason). A prompt longer than the context keeps its
 * strip (the user sees where to cut) and returns the reason runs refuse it.
 * @returns the reason when it failed or is too long, else null.
 */
export async function tokenizePrompt(): Promise<string | null> {
  const s = useStore.getState();
  if (s.modelStatus !== 'ready') return null;
  const ticket = ++tokenizeTicket;
  try {
    const { ids, tokens, tooLong } = await inOrder((w) => w.tokenize({ prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking }));
    if (ticket === tokenizeTicket && !sameBarePrompt(useStore.getState().promptTokens, ids)) useStore.getState().setPromptTokens({ ids, tokens });
    return tooLong ?? null;
  } catch (e) {
    if (ticket === tokenizeTicket) useStore.getState().setPromptTokens(null);
    return messageOf(e);
  }
}

let futuresTicket = 0;

/**
 * Resolves both futures after the prompt as edited, for the chips under the futures (no job, no
 * banner: a future that does not resolve shows why in place of its chips). A later call wins.
 */
export async function resolveFutures(): Promise<void> {
  const s = useStore.getState();
  if (s.modelStatus !== 'ready') return;
  const ticket = ++futuresTicket;
  const p = { prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking };
  const one = async (which: 'good' | 'bad'): Promise<FutureChips> => {
    const key = futureKey(p, s[which]);
    try {
      const f = futureInput(s[which]);
      return { key, resolved: await inOrder((w) => w.resolveFuture(p, f, which)) };
    } catch (e) {
      return { key, error: messageOf(e) };
    }
  };
  const [good, bad] = await Promise.all([one('good'), one('bad')]);
  if (ticket === futuresTicket) useStore.getState().setFutureChips({ good, bad });
}
