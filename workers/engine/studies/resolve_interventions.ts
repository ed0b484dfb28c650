/**
 * Turns intervention specs into engine Interventions for one run, doing the work a spec may
 * need first: reading vector files (runner) and capturing a patch source's activations
 * (activation patching, Heimersheim & Nanda arXiv 2404.15255) or, for patch_route, its chosen experts.
 */
import type { Engine } from '../engine';
import { chatTurn, promptWith, type FutureInput, type PromptInput } from '../prompt';
import type { Intervention } from '../model/intervention';
import type { Sae } from '../sae/sae';
import { isSaeFeatureRef, parseSpec, toIntervention, type InterventionSpec, type RunShape } from '../steering/spec';
import { assertVectorFits, type ImportedVector } from '../steering/vector_io';

/**
 * Interventions written as JSON specs (workers/engine/steering/spec.ts) with inline vectors. The
 * worker validates and resolves them (resolveInterventions: patch sources are run first) against
 * the request's prompt and, for a generation, max_new_tokens; they act after any `interventions`
 * of the request, in list order (at one hook, each on the output of the previous one). Errors name
 * the spec by its 1-based place in the list: "intervention 2: vector has 48 values, but …".
 */
export interface SpecRequest {
  specs?: InterventionSpec[];
  /** How errors name each spec (default "intervention i+1"), e.g. the UI's "intervention #3". */
  specLabels?: string[];
}

/**
 * The prompt a study that measures at the decision point runs (Engine.decisionPoint,
 * decision_point.ts): `p` with the futures' shared prefix teacher-forced after it (forcedIds), so
 * that intervention positions resolve against the T tokens the run has — "the last token" is the
 * decision point, and explicit positions and ranges may reach into the prefix. `p` as it is without
 * both futures or when they share no prefix.
 * @throws Error for a bad prompt or future (PromptCodec.encodePrompt, resolveFuture).
 */
export function atDecisionPoint(engine: Engine, p: PromptInput, good?: FutureInput, bad?: FutureInput): PromptInput {
  return good && bad ? engine.decisionPoint(p, good, bad).input : p;
}

/**
 * The run shape interventions are checked against for a run of prompt `p` (its forcedIds included:
 * nPrompt = encodePrompt(p).length tokens) and, when generating, this many new tokens. It keeps
 * p's whole chat turn (chat template, system prompt, tools, enable_thinking: prompt.ts chatTurn),
 * which a patch source is encoded in (sourcePrompt). Every RunShape with a prompt is built here.
 * @throws Error for a bad prompt (PromptCodec.encodePrompt).
 */
export function runShapeOf(engine: Engine, p: PromptInput, maxNewTokens?: number): RunShape {
  return {
    nPrompt: engine.encodePrompt(p).length, ...chatTurn(p),
    ...(p.forcedIds?.length ? { forcedIds: p.forcedIds } : {}), ...(maxNewTokens !== undefined ? { maxNewTokens } : {}),
  };
}

/**
 * A patch source prompt as the run's prompt is encoded: the text `source` in the run's chat turn
 * (chat template, system prompt, tools, enable_thinking), with the run's forcedIds after it, so
 * that position t of the source is position t of the run (activation and routing patching).
 */
export function sourcePrompt(source: string, run: RunShape): PromptInput {
  return { ...promptWith(source, run), ...(run.forcedIds?.length ? { forcedIds: run.forcedIds } : {}) };
}

/**
 * The interventions `specs` resolve to for a run of prompt `p` (and, when generating, this many
 * new tokens): each spec parsed (parseSpec, named by its label) and resolved (resolveInterventions)
 * against runShapeOf(p); a study at the decision point passes atDecisionPoint(p).
 * No specs: none, and nothing runs.
 * @throws Error naming the spec, as parseSpec and resolveInterventions do.
 */
export async function specInterventions(engine: Engine, p: PromptInput, specs: SpecRequest, opts: { maxNewTokens?: number; loadSae?: ResolveOptions['loadSae'] } = {}): Promise<Intervention[]> {
  if (!specs.specs?.length) return [];
  const label = (i: number) => specs.specLabels?.[i] ?? `intervention ${i + 1}`;
  const parsed = specs.specs.map((s, i) => parseSpec(s, label(i)));
  return resolveInterventions(engine, parsed, runShapeOf(engine, p, opts.maxNewTokens), { label, ...(opts.loadSae ? { loadSae: opts.loadSae } : {}) });
}

export interface ResolveOptions {
  /** Reads a vector file named in a spec (the runner passes one; the browser has none). */
  loadVector?: (path: string) => Promise<ImportedVector> | ImportedVector;
  /** Called when a file's metadata disagrees with the spec (another hook or model): not an error. */
  warn?: (message: string) => void;
  /** The loaded SAE a spec's "sae" (or vector {"sae"}) names: the runner loads a path, the worker looks up an id. */
  loadSae?: (ref: string) => Promise<Sae> | Sae;
  /** Error-message prefix of spec i (default "intervention i+1"). */
  label?: (i: number) => string;
}

/**
 * Resolves specs in order. Patch sources run the source prompt through the model (this
 * overwrites the KV cache, so call it before the analysis or generation that uses the result).
 * @param run prompt length, chat turn and generation length of the run the interventions are for
 *   (runShapeOf): a patch source is encoded in the run's chat turn with run.forcedIds after it
 *   (sourcePrompt), so its positions line up with the run's, at the decision point too.
 * @throws Error with the spec's label for every problem toIntervention reports, a vector file
 *   that cannot be read or does not fit the hook, a patch source prompt that cannot be encoded
 *   or whose token length differs from the run's prompt (run.nPrompt), or an SAE that cannot be
 *   loaded or does not fit the model.
 */
export async function resolveInterventions(engine: Engine, specs: readonly InterventionSpec[], run: RunShape, opts: ResolveOptions = {}): Promise<Intervention[]> {
  const out: Intervention[] = [];
  for (let i = 0; i < specs.length; i++) {
    const label = opts.label?.(i) ?? `intervention ${i + 1}`;
    let spec = specs[i];
    const saes = new Map<string, Sae>();
    try {
      for (const ref of [spec.sae, isSaeFeatureRef(spec.vector) ? spec.vector.sae : undefined]) {
        if (ref === undefined || saes.has(ref)) continue;
        if (!opts.loadSae) throw new Error(`SAE "${ref}" cannot be loaded here`);
        saes.set(ref, await opts.loadSae(ref));
      }
      if (typeof spec.vector === 'string') {
        if (!opts.loadVector) throw new Error(`vector "${spec.vector}" is a file path; only the command-line runner reads vector files (pass the values inline)`);
        const file = spec.vector;
        const imported = await opts.loadVector(file);
        if (spec.type !== 'patch') assertVectorFits(imported.vector, engine.spec, spec.hook, file, spec.head);
        if (imported.hook && imported.hook !== spec.hook) opts.warn?.(`${label}: ${file} was computed at ${imported.hook}; applying it at ${spec.hook}`);
        if (imported.model && imported.model !== engine.label) opts.warn?.(`${label}: ${file} was computed on ${imported.model}; this model is ${engine.label}`);
        spec = { ...spec, vector: imported.vector };
      }
      if ((spec.type === 'patch' || spec.type === 'patch_route') && spec.source !== undefined) {
        const ids = engine.encodePrompt(sourcePrompt(spec.source, run));
        if (ids.length !== run.nPrompt) throw new Error(`${spec.type} source "${spec.source}" has ${ids.length} tokens but the prompt has ${run.nPrompt}; ${spec.type === 'patch' ? 'activation' : 'routing'} patching needs prompts of equal token length (the same positions)`);
        const { captured } = await engine.run(ids, { capture: [spec.hook], logits: 'last' });
        const flat = captured.get(spec.hook)!;
        const w = flat.length / ids.length;
        spec = { ...spec, source: undefined, vector: Array.from({ length: ids.length }, (_, t) => Array.from(flat.subarray(t * w, (t + 1) * w))) };
      }
    } catch (e) {
      throw new Error(`${label}: ${(e as Error).message}`);
    }
    out.push(toIntervention(spec, engine.spec, run, label, (ref) => saes.get(ref)!));
  }
  return out;
}
