import { useStore, type AppState } from '../store';
import { ExperimentError, parseDeck, readExperiment, type Deck, type Experiment, type ExperimentSae } from '../../workers/shared';
import { apply, capture, experimentFromHash, experimentHash, experimentJson, modelOf, qrExperiment, type Applied } from '../lib/experiment_state';
import { download } from '../lib/export';
import { posterQrLink } from '../lib/qr_link';
import { analyse } from './analyse';
import { generate } from './generate';
import { bundledModelNames, checkInterventionsFit, listModels, loadDefaultModel, loadHubModel, loadModel, localModelSource } from './model';
import { runSweep } from './sweep';
import { loadSae } from './sae';
import { captureActivations } from './activations';
import { loadModelB } from './model_b';
import { runCompare } from './compare';
import { currentIdentity } from './identity';

/** Local-storage key of the last experiment (no Hub token is ever part of it). */
export const STORAGE_KEY = 'branchpoint.experiment';

/** The experiment as the workbench holds it now (lib/experiment_state.ts capture). */
export function currentExperiment(): Experiment {
  return capture(useStore.getState(), bundledModelNames());
}

/** Puts an experiment into the store (lib/experiment_state.ts apply: one update). */
export function applyExperiment(e: Experiment): Applied {
  return apply(useStore, e);
}

/**
 * Loads the experiment's model unless it is the one loaded. A model that cannot be opened from
 * here (a local folder; a bundled name this copy lacks) is named in the notice, and the default
 * model is loaded instead when none is, so the app stays usable.
 * @returns whether the experiment's own model is loaded.
 */
async function ensureModel(e: Experiment): Promise<boolean> {
  const st = useStore.getState();
  const loaded = modelOf(st.lastLoad?.source ?? null, bundledModelNames());
  if (st.modelStatus === 'ready' && JSON.stringify(loaded) === JSON.stringify(e.model)) return true;
  const fallback = async () => { if (useStore.getState().modelStatus !== 'ready') await loadDefaultModel(); };
  const m = e.model;
  const notice = (why: string) => useStore.getState().setExperimentNotice({ what: 'The experiment\'s model could not be loaded', why });
  switch (m.kind) {
    case 'bundled':
      if (!bundledModelNames().includes(m.name)) {
        notice(`It uses "${m.name}", which this copy of Branchpoint does not ship (it has ${bundledModelNames().join(', ') || 'none'}). Load that model, then press Analyse.`);
        await fallback();
        return false;
      }
      return loadModel(localModelSource(m.name));
    case 'hub':
      if (await loadHubModel({ kind: 'hub', repo: m.repo, revision: m.revision, endpoint: m.endpoint })) return true;
      notice(`${m.repo}@${m.revision} could not be loaded (offline and not in this browser's cache, gated, or gone); see the message above. The prompt and interventions are restored.`);
      await fallback();
      return false;
    case 'url':
      if (await loadModel({ kind: 'url', url: m.url, label: m.label })) return true;
      notice(`The model at ${m.url} could not be loaded. The prompt and interventions are restored.`);
      await fallback();
      return false;
    case 'local':
      notice(`It used a folder on another computer ("${m.name}"). Open that folder (Open folder…) and press Analyse; the prompt and interventions are restored.`);
      await fallback();
      return false;
  }
}

/**
 * Loads the experiment's model B (v3 `modelB`) unless it is the one loaded; an experiment without
 * one leaves model B as it is. A B that cannot be opened from here (a local folder, a bundled name
 * this copy lacks, a load that fails) is named in the notice; model A stays.
 */
async function ensureModelB(e: Experiment): Promise<void> {
  const m = e.modelB;
  if (!m) return;
  listModels(); // a kiosk never ran startUp: model B's picker lists the bundled models too
  const st = useStore.getState();
  if (st.modelB?.status === 'ready' && JSON.stringify(modelOf(st.modelB.source, bundledModelNames())) === JSON.stringify(m)) return;
  const notice = (why: string) => useStore.getState().setExperimentNotice({ what: 'The experiment\'s model B could not be loaded', why });
  switch (m.kind) {
    case 'bundled':
      if (!bundledModelNames().includes(m.name)) return notice(`It compares with "${m.name}", which this copy of Branchpoint does not ship (it has ${bundledModelNames().join(', ')}). Load a model B in the Compare view.`);
      if (!(await loadModelB(localModelSource(m.name)))) notice(`${m.name} could not be loaded as model B (see the message above).`);
      return;
    case 'hub':
      if (!(await loadModelB({ kind: 'hub', repo: m.repo, revision: m.revision, endpoint: m.endpoint }))) notice(`${m.repo}@${m.revision} could not be loaded as model B (offline and not cached, gated, too large beside model A, or gone).`);
      return;
    case 'url':
      if (!(await loadModelB({ kind: 'url', url: m.url, label: m.label }))) notice(`The model at ${m.url} could not be loaded as model B.`);
      return;
    case 'local':
      return notice(`Its model B was a folder on another computer ("${m.name}"). Open that folder as model B in the Compare view.`);
  }
}

/**
 * Restores an experiment (from a link, a file, local storage or a poster deck) and reruns it: the
 * model is loaded if needed, the state put back, then Analyse (and Generate on the generation
 * view, the sweep on the dose–response view). Problems become a notice; the app stays usable.
 * @param opts.rerun false: put the state back without rerunning (results on display then show as
 *   stale where they answer another experiment); default true.
 */
export async function restoreExperiment(e: Experiment, origin: string, opts: { rerun?: boolean } = {}): Promise<void> {
  const rerun = opts.rerun ?? true;
  const s = useStore.getState();
  s.setRestoring(true);
  s.setExperimentNotice(null);
  try {
    const { missing, pendingSaes } = applyExperiment(e);
    const ok = await ensureModel(e);
    // the restored interventions pass the same fit gate as ones the user ticks: one that does not fit the model
    // loaded now (a layer it lacks, a vector built on another model) is switched off, its row and the notice saying why
    const info = useStore.getState().info;
    if (ok && info) checkInterventionsFit(info);
    if (ok) await ensureModelB(e);
    if (missing.length) {
      useStore.getState().setExperimentNotice({ what: `The ${origin} does not carry every vector`, why: `Left out (too large for a link): ${missing.join(', ')}. The interventions using them have no vector; open the experiment file, or build or import the vector and pick it.` });
    }
    if (!ok) return;
    await restoreSaes(e, pendingSaes);
    if (!rerun) {
      useStore.getState().setTokenSelection(e.view.selection ?? null);
      return;
    }
    await analyse();
    restoreSelection(e.view.selection);
    const view = useStore.getState().view;
    if (view === 'generation') await generate();
    if (view === 'activations') await captureActivations();
    if (view === 'dose' && useStore.getState().sweepSettings.vectorId) await runSweep();
    if (view === 'compare' && useStore.getState().modelB?.status === 'ready') await runCompare();
  } finally {
    useStore.getState().setRestoring(false);
    saveToLink();
  }
}

/** Where an experiment's SAE came from, in words. */
function saeWhere(x: ExperimentSae): string {
  const src = x.source;
  return src.kind === 'hub' ? `${src.repo}/${src.path}` : src.kind === 'url' ? src.url : `the local ${x.label || src.name}`;
}

/**
 * Loads the SAEs the experiment's feature interventions use that are not loaded yet (`pending`,
 * from apply: Hub folders and URLs; a local folder cannot be reopened from a link) and switches
 * those interventions back on as saved. The ones whose SAE cannot be loaded stay off (and keep
 * naming it), and the notice says which and why. Interventions whose SAE was loaded already were
 * attached by apply and are left as they are.
 */
async function restoreSaes(e: Experiment, pending: number[]): Promise<void> {
  const idOf = new Map<number, string>();
  const unloadable = new Map<number, string>();
  for (const i of pending) {
    const x = e.saes[i], src = x.source;
    if (src.kind === 'local') { unloadable.set(i, `${saeWhere(x)} was opened from this computer's files; open it again in the SAE view`); continue; }
    const id = await loadSae(src.kind === 'hub' ? { kind: 'hub', repo: src.repo, path: src.path, revision: src.revision, endpoint: src.endpoint } : { kind: 'url', url: src.url, label: src.label }, x.hook);
    if (id) idOf.set(i, id); else unloadable.set(i, `${saeWhere(x)} could not be loaded (see the message above)`);
  }
  const s = useStore.getState();
  const drafts = s.interventions;
  const off: string[] = [];
  const offIds: number[] = [];
  e.interventions.forEach((d, k) => {
    const draft = drafts[k];
    if (!draft || draft.saeFeature || (d.sae === null && d.type !== 'sae_clamp')) return;
    const id = d.sae ? idOf.get(d.sae.index) : undefined;
    if (d.sae && id) s.updateIntervention(draft.id, { saeFeature: { sae: id, feature: d.sae.feature }, saePending: undefined, enabled: d.enabled });
    else offIds.push(draft.id), off.push(`#${k + 1} (${d.type === 'sae_clamp' ? 'clamp' : 'steer along'} feature ${d.sae?.feature ?? '?'}): ${d.sae ? unloadable.get(d.sae.index) : 'the experiment does not name its SAE (saved by an older version)'}`);
  });
  if (off.length) {
    s.setExperimentNotice({ what: 'Some SAE feature interventions are switched off', why: `${off.join('; ')}. Then place the feature again from the SAE view (the rest of the experiment is restored).`, interventions: offIds });
  }
}

/** The saved token-strip selection, put back once the analysis has tokenized the prompt (kept only where it fits its tokens). */
function restoreSelection(sel: Experiment['view']['selection']): void {
  const n = useStore.getState().promptTokens?.ids.length ?? 0;
  useStore.getState().setTokenSelection(sel && sel.end <= n ? sel : null);
}

/** Shows why a link, file or stored experiment could not be read. */
function showUnreadable(e: unknown, origin: string): void {
  const why = e instanceof ExperimentError || e instanceof Error ? e.message : String(e);
  useStore.getState().setExperimentNotice({ what: `This ${origin} could not be opened`, why: `${why}. The workbench starts on its default experiment instead.`, unread: true });
}

/** The poster deck shipped with the app (public/experiments/deck.json). @throws Error when it cannot be fetched or is not a deck. */
export async function fetchDeck(): Promise<Deck> {
  const r = await fetch(new URL('experiments/deck.json', document.baseURI));
  if (!r.ok) throw new Error(`the deck could not be fetched (HTTP ${r.status})`);
  return parseDeck(await r.json());
}

/** A short link to experiment n (0-based) of the shipped deck: `#deck=n` (fits a QR code where the full link would not). */
export function deckLink(n: number): string {
  return `${location.origin}${location.pathname}${location.search}#deck=${n}`;
}

/** The experiment a `#deck=n` hash names, or null for another hash. @throws Error when the deck has no experiment n. */
async function experimentFromDeckHash(hash: string): Promise<Experiment | null> {
  const m = /^#deck=(\d+)$/.exec(hash);
  if (!m) return null;
  const deck = await fetchDeck();
  const e = deck.experiments[Number(m[1])];
  if (!e) throw new Error(`the deck has ${deck.experiments.length} experiments; there is no experiment ${Number(m[1]) + 1}`);
  return e;
}

/** On start: the experiment in the link (or a deck entry, `#deck=n`), else the last one (local storage), else the default model and prompt. */
export async function startUp(): Promise<void> {
  listModels();
  let fromLink: Experiment | null = null;
  try {
    fromLink = experimentFromHash(location.hash) ?? await experimentFromDeckHash(location.hash);
  } catch (e) {
    showUnreadable(e, 'link');
    await loadDefaultModel();
    return;
  }
  if (fromLink) return restoreExperiment(fromLink, 'link');
  const stored = readStored();
  if (stored) return restoreExperiment(stored, 'saved experiment');
  await loadDefaultModel();
  saveToLink();
}

/** The last experiment from local storage; null when none or unreadable (then it is dropped). */
function readStored(): Experiment | null {
  try {
    const text = localStorage.getItem(STORAGE_KEY);
    return text ? readExperiment(text) : null;
  } catch {
    try { localStorage.removeItem(STORAGE_KEY); } catch { /* storage unavailable */ }
    return null;
  }
}

let lastHash = '';

/** The user's experiment while poster mode shows its slides (null outside poster mode): the link and local storage keep it. */
let posterHeld: Experiment | null = null;

/**
 * The results on display that a deck slide's restore replaces (its Analyse, Generate, sweep,
 * capture and studies, and apply's reset of the capture): held with the experiment and put back on
 * leaving, so the user's own figures come back as they were, not a slide's marked stale.
 */
const SLIDE_RESULTS = ['promptTokens', 'futureChips', 'result', 'pattern', 'layerPatterns', 'selectedHead', 'gen', 'sweep', 'captured', 'studies'] as const;
type SlideResults = Pick<AppState, (typeof SLIDE_RESULTS)[number]>;
/** SLIDE_RESULTS as poster mode found them, and the model load they belong to (actions/identity.ts; '' when none was ready). */
let resultsHeld: { results: SlideResults; identity: string } | null = null;

/**
 * Poster mode starts: keeps the experiment open now, and stops writing the link and local storage
 * (deck slides load their own experiments, which must not replace the user's saved one).
 * @returns the held experiment: poster mode's first slide (one capture serves both).
 */
export function holdForPoster(): Experiment {
  if (!posterHeld) holdPosterResults();
  posterHeld ??= currentExperiment();
  return posterHeld;
}

/**
 * The results on display now are the user's (poster mode's first slide, its stale views run again:
 * PosterMode calls this on leaving it for a deck slide): held to be put back on leaving poster mode.
 */
export function holdPosterResults(): void {
  const st = useStore.getState();
  resultsHeld = { results: Object.fromEntries(SLIDE_RESULTS.map((k) => [k, st[k]])) as SlideResults, identity: currentIdentity() };
}

/**
 * Poster mode ends: puts the held experiment back (prompt, futures, vectors, interventions,
 * settings, view) without rerunning it when a slide was loaded (`slideLoaded`), with the results
 * that were on display when poster mode began (SLIDE_RESULTS) when the same model load is back
 * (a slide on another model reloads the user's: those results answer it still, and a branch tree,
 * which lives in the worker, is gone with the reload), and saves the link and local storage again.
 */
export async function releasePosterHold(slideLoaded: boolean): Promise<void> {
  const e = posterHeld, held = resultsHeld;
  posterHeld = null;
  resultsHeld = null;
  if (!e) return;
  if (!slideLoaded) { saveToLink(); return; }
  await restoreExperiment(e, 'experiment', { rerun: false });
  if (held && held.identity !== '' && currentIdentity() === held.identity) useStore.setState(held.results);
}

/**
 * Writes the current experiment into the URL hash (replacing the history entry) and local storage.
 * @returns the names of vectors the link leaves out (too large).
 */
export function saveToLink(): string[] {
  const s = useStore.getState();
  if (s.restoring || !s.lastLoad || posterHeld) return [];
  const e = currentExperiment();
  const { hash, missing } = experimentHash(e);
  if (hash !== lastHash) {
    lastHash = hash;
    history.replaceState(history.state, '', `${location.pathname}${location.search}${hash}`);
  }
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(e));
  } catch { /* storage full or disabled: the link still holds it */ }
  return missing;
}

/**
 * Keeps the link and local storage in step with the workbench, and restores an experiment pasted
 * into the address bar. @returns a function that stops it.
 */
export function followExperiment(): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const unsubscribe = useStore.subscribe((s, prev) => {
    const changed = s.prompt !== prev.prompt || s.chatTemplate !== prev.chatTemplate || s.system !== prev.system || s.tools !== prev.tools || s.good !== prev.good || s.bad !== prev.bad
      || s.generation !== prev.generation || s.interventions !== prev.interventions || s.vectors !== prev.vectors || s.view !== prev.view
      || s.showTables !== prev.showTables || s.showDifference !== prev.showDifference || s.sweepSettings !== prev.sweepSettings || s.lastLoad !== prev.lastLoad
      || s.sinkEps !== prev.sinkEps || s.heatmapScale !== prev.heatmapScale
      || s.activationsHook !== prev.activationsHook || s.tokenSelection !== prev.tokenSelection
      || s.modelB?.source !== prev.modelB?.source;
    if (!changed) return;
    clearTimeout(timer);
    timer = setTimeout(saveToLink, 300);
  });
  const onHash = () => {
    if (location.hash === lastHash) return;
    try {
      const e = experimentFromHash(location.hash);
      if (e) void restoreExperiment(e, 'link');
    } catch (err) {
      showUnreadable(err, 'link');
    }
  };
  addEventListener('hashchange', onHash);
  return () => { unsubscribe(); removeEventListener('hashchange', onHash); clearTimeout(timer); };
}

/**
 * The link to this experiment (the page's address with the experiment hash), and the vectors it leaves out.
 * @param opts.forQr the shorter link a QR code carries: without the vectors' contrastive texts (lib/experiment_state.ts qrExperiment);
 * @param opts.short written as its difference from the default experiment (`#q=`, lib/link_delta.ts): the shortest link.
 */
export function experimentLink(opts: { forQr?: boolean; short?: boolean } = {}): { url: string; missing: string[] } {
  const e = currentExperiment();
  const { hash, missing } = experimentHash(opts.forQr ? qrExperiment(e) : e, { short: opts.short });
  return { url: `${location.origin}${location.pathname}${location.search}${hash}`, missing };
}

/** The link poster mode's first slide shows as a QR code: the experiment as edited, sparse enough to scan (lib/qr_link.ts posterQrLink). */
export function posterOwnLink(): { url: string; omitted: string[] } {
  return posterQrLink(currentExperiment(), `${location.origin}${location.pathname}${location.search}`);
}

/** Saves the experiment as a JSON file (schema: docs/experiment-format.md), vectors inside. */
export function saveExperimentFile(): void {
  const e = currentExperiment();
  const stem = e.prompt.slice(0, 32).replace(/[^\w]+/g, '-').replace(/^-|-$/g, '') || 'experiment';
  download(`branchpoint-${stem}.json`, new Blob([experimentJson(e)], { type: 'application/json' }));
}

/** Opens an experiment file and reruns it; a file that is not one says why. */
export async function openExperimentFile(file: File): Promise<void> {
  let e: Experiment;
  try {
    e = readExperiment(await file.text());
  } catch (err) {
    useStore.getState().setExperimentNotice({ what: `${file.name} could not be opened`, why: (err as Error).message, unread: true });
    return;
  }
  await restoreExperiment(e, 'file');
}
