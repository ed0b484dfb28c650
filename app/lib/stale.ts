/**
 * Whether a result on display still answers the experiment as edited, and how the interventions it
 * was computed under are named in the list now. Comparisons only; no model maths.
 */
import type { AnalysisResult, AppliedIntervention } from '../store/results';
import type { FutureDraft, ToolSpec } from '../store/experiment';
import type { InterventionDraft } from '../store/steering';
import { appliedInterventions } from './specs';
import { loadStaleness } from './model_identity';

/**
 * What changed since a result was computed: 'model' (another model, or none, is loaded now),
 * 'load' (the same model loaded again with another weight storage or backend: other numbers),
 * 'prompt' (the prompt or its chat turn — chat template, system prompt, tools: its positions may
 * not exist any more), 'futures',
 * 'interventions' (the enabled ones, their order or their settings).
 */
export type StalePart = 'model' | 'load' | 'prompt' | 'futures' | 'interventions';

/**
 * The chat turn a run rendered its prompts with, as the store holds it (lib/experiment_request.ts
 * ChatTurnFields): a result records it beside its prompt, and a change of any of them makes it stale.
 */
export interface TurnRun {
  chatTemplate: boolean;
  /** The system prompt (undefined: none). */
  system: string | undefined;
  tools: ToolSpec[];
  /** The template's enable_thinking (undefined: not passed, the template's default). */
  enableThinking?: boolean;
}

/**
 * Whether two chat turns render a prompt the same: the template off in both (the system prompt and
 * tools are then not read: workers/engine/prompt.ts promptConversation), or on in both with the same
 * system prompt ('' and none alike), the same tools (compared as JSON) and the same enable_thinking.
 */
export function sameTurn(a: TurnRun, b: TurnRun): boolean {
  if (a.chatTemplate !== b.chatTemplate) return false;
  return !a.chatTemplate || ((a.system || undefined) === (b.system || undefined) && JSON.stringify(a.tools) === JSON.stringify(b.tools) && a.enableThinking === b.enableThinking);
}

/** The chat-turn fields of `s` alone (what a result records of the experiment's chat turn). */
export function turnOf(s: TurnRun): TurnRun {
  return { chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking };
}

/** The experiment as edited now, and the model ready now (null while none is). */
export interface Current extends TurnRun {
  model: string | null;
  /** lib/model_identity.ts modelIdentity of the model ready now (null while none is). */
  identity: string | null;
  prompt: string;
  good: FutureDraft;
  bad: FutureDraft;
  interventions: readonly InterventionDraft[];
}

const sameFuture = (a: FutureDraft, b: FutureDraft) => a.mode === b.mode && a.value === b.value;

/** A draft's settings, without its list identity (id) and switch (only enabled ones are compared). */
const settings = ({ id: _id, enabled: _on, ...rest }: InterventionDraft) => JSON.stringify(rest);

/** Whether two runs switch on the same interventions: the same settings in the same order (list ids aside). */
const sameSteering = (a: readonly AppliedIntervention[], b: readonly AppliedIntervention[]) =>
  a.length === b.length && a.every((x, i) => settings(x.draft) === settings(b[i].draft));

/** What differs between an analysis and the experiment now, in the order of StalePart (empty: up to date). */
export function staleParts(r: Pick<AnalysisResult, 'modelLabel' | 'computedWith' | 'prompt' | 'chatTemplate' | 'system' | 'tools' | 'enableThinking' | 'good' | 'bad' | 'steering'>, now: Current): StalePart[] {
  const load = loadStaleness(r.modelLabel, r.computedWith, { label: now.model, identity: now.identity });
  const parts: StalePart[] = load ? [load] : [];
  if (now.prompt !== r.prompt || !sameTurn(now, r)) parts.push('prompt');
  if (!sameFuture(now.good, r.good) || !sameFuture(now.bad, r.bad)) parts.push('futures');
  if (!sameSteering(appliedInterventions(now.interventions), r.steering)) parts.push('interventions');
  return parts;
}

/**
 * A run on the Patching view's prompt pair — a patching grid, or the decision-point report — as it
 * was run: the pair, the chat turn (template, system prompt, tools), the experiment's futures, and
 * the interventions it switched on (the report's intervention window; null when it ran none).
 */
export interface PairRun extends TurnRun {
  modelLabel: string;
  /** lib/model_identity.ts modelIdentity of the load it ran on ('' when not known). */
  computedWith: string;
  clean: string;
  corrupt: string;
  good: FutureDraft;
  bad: FutureDraft;
  /** The interventions its intervention window switched on (a report's changeable panel); null or absent: it ran none. */
  windowSteering?: readonly AppliedIntervention[] | null;
}

/** The pair, the futures and the interventions a rerun would use now, and the model ready now. */
export interface PairNow extends Omit<Current, 'prompt' | 'interventions'> {
  clean: string;
  corrupt: string;
  /** What the run's window would switch on now (actions/window.ts windowApplied). */
  windowSteering: readonly AppliedIntervention[];
}

/**
 * What differs between a run on the prompt pair and the setup now, in the order of StalePart:
 * 'prompt' when either prompt of the pair or the chat turn changed (the experiment's prompt is
 * not the pair's), 'interventions' only for a run that switched some on. Empty: up to date.
 */
export function pairStaleParts(r: PairRun, now: PairNow): StalePart[] {
  const load = loadStaleness(r.modelLabel, r.computedWith, { label: now.model, identity: now.identity });
  const parts: StalePart[] = load ? [load] : [];
  if (now.clean !== r.clean || now.corrupt !== r.corrupt || !sameTurn(now, r)) parts.push('prompt');
  if (!sameFuture(now.good, r.good) || !sameFuture(now.bad, r.bad)) parts.push('futures');
  if (r.windowSteering && !sameSteering(now.windowSteering, r.windowSteering)) parts.push('interventions');
  return parts;
}

/** The parts named in words (prompt, futures, interventions); a view may name its own prompt otherwise ("the prompt pair"). */
export type StaleNames = Partial<Record<Exclude<StalePart, 'model' | 'load'>, string>>;

/** "the prompt and the futures changed" for the parts other than the model and its load; '' for none. */
export function staleText(parts: readonly StalePart[], own: StaleNames = {}): string {
  type Named = Exclude<StalePart, 'model' | 'load'>;
  const names: Record<Named, string> = { prompt: 'the prompt', futures: 'the futures', interventions: 'the interventions', ...own };
  const list = parts.filter((p): p is Named => p !== 'model' && p !== 'load').map((p) => names[p]);
  if (!list.length) return '';
  const joined = list.length === 1 ? list[0] : `${list.slice(0, -1).join(', ')} and ${list.at(-1)}`;
  return `${joined} changed`;
}

/** An intervention a result was computed under, as the list holds it now. */
export interface SteeringNow {
  /** Its place in the list now (1-based), or null when it was removed. */
  n: number | null;
  /** 'edited': its settings changed since; 'off': it is switched off now. */
  change: 'none' | 'edited' | 'off' | 'removed';
}

/** Each applied intervention of a result, found in the list now by its id. */
export function steeringNow(steering: readonly AppliedIntervention[], list: readonly InterventionDraft[]): SteeringNow[] {
  return steering.map(({ draft }) => {
    const i = list.findIndex((d) => d.id === draft.id);
    if (i < 0) return { n: null, change: 'removed' };
    const d = list[i];
    return { n: i + 1, change: !d.enabled ? 'off' : settings(d) !== settings(draft) ? 'edited' : 'none' };
  });
}

/** "#2", "#2 (edited since)", "#2 (off now)" or "one since removed"; short (marks beside a figure): "#2", "#2 edited", "#2 off", "removed". */
export function steeringName(s: SteeringNow, short = false): string {
  if (s.n === null) return short ? 'removed' : 'one since removed';
  if (s.change === 'edited') return short ? `#${s.n} edited` : `#${s.n} (edited since)`;
  if (s.change === 'off') return short ? `#${s.n} off` : `#${s.n} (off now)`;
  return `#${s.n}`;
}

/** A run over a labelled prompt set (the Probes view's probes) as it was read: its prompts of each class and the chat turn they rendered with. */
export interface SetRun extends TurnRun {
  modelLabel: string;
  /** lib/model_identity.ts modelIdentity of the load it ran on ('' when not known). */
  computedWith: string;
  positive: readonly string[];
  negative: readonly string[];
}

/** The set as edited now (one prompt per non-empty line), the chat turn and the model ready now. */
export interface SetNow extends TurnRun {
  model: string | null;
  identity: string | null;
  positive: readonly string[];
  negative: readonly string[];
}

/**
 * What differs between a run over a labelled set and the setup now, in the order of StalePart:
 * 'prompt' when a prompt of either class or the chat turn (template, system prompt, tools) changed:
 * every prompt of the set rendered with it. Empty: up to date.
 */
export function setStaleParts(r: SetRun, now: SetNow): StalePart[] {
  const load = loadStaleness(r.modelLabel, r.computedWith, { label: now.model, identity: now.identity });
  const parts: StalePart[] = load ? [load] : [];
  const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
  if (!same(r.positive, now.positive) || !same(r.negative, now.negative) || !sameTurn(now, r)) parts.push('prompt');
  return parts;
}
