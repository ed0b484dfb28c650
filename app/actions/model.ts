import { noteModelUsed } from '../lib/recent_models';
import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { LoadOptions, LoadProgress, ModelInfo, ModelSource } from '../../workers/protocol';
import { catalogEntry } from '../../workers/shared';
import bundled from 'virtual:bundled-models';
import { refreshCachedModels } from './cache';
import { runJob } from './job';
import { inOrder, worker } from './worker';
import { loadCancels } from '../lib/job_rules';
import { modelOf } from '../lib/experiment_state';
import { loadedSaes, reattachSaes } from './sae_reload';
import { recheckForModel } from '../lib/intervention_fit';

/** The models shipped with the app under models/ (a manifest built with the app: tools/bundled_models.ts). */
export function bundledModelNames(): string[] {
  return bundled.map((m) => m.name);
}

/** The source for a bundled model folder, relative to the page (so the site works from any sub-path). */
export function localModelSource(name: string): ModelSource {
  // the manifest lists the folder's files: the load asks for no other (no 404 for an index it lacks)
  const files = bundled.find((m) => m.name === name)?.files;
  return { kind: 'url', url: new URL(`models/${name}/`, document.baseURI).href, label: name, ...(files ? { files: files.map((f) => ({ path: f.path, bytes: f.bytes })) } : {}) };
}

/** A human label for a source (shown while it loads and in the banner if it fails). */
export function labelOf(source: ModelSource): string {
  switch (source.kind) {
    case 'url': return source.label ?? source.url;
    case 'hub': return `${source.repo}@${source.revision ?? 'main'} (Hub)`;
    case 'files': return source.label;
  }
}

/** The latest load started; an earlier one that ends after it changes nothing. */
let loadTicket = 0;

/**
 * Loads a model in the worker (replacing the current one), with progress; a download can be
 * cancelled. A running cancellable job (a generation) is cancelled first (lib/job_rules.ts); the
 * model shows as loading, so Generate and Analyse stay disabled until it is ready. On failure the banner says why (with "Load anyway" when the size check refused it)
 * and the previous results stay on screen.
 */
export async function loadModel(source: ModelSource, loadOptions: LoadOptions = {}): Promise<boolean> {
  const s = useStore.getState();
  const options: LoadOptions = { weightDtype: s.weightDtype, ...loadOptions };
  const label = labelOf(source);
  const ticket = ++loadTicket;
  // A running generation (or sweep, tree, batch…) is cancelled now rather than finished first: the
  // page sends worker calls in order, so without this the load would wait behind it. An earlier
  // load still running (a link opened while the start-up model loads) is cancelled too and its
  // outcome ignored: the newest load decides what is loaded, never two racing.
  if (loadCancels(s.job) || s.job?.kind === 'load') void worker().cancel();
  // The same model again (another weight storage, a fresh device): its SAEs are read again after the load.
  const saes = s.saes.length && sameModel(s.lastLoad?.source, source) ? loadedSaes() : null;
  const before = { info: s.info, label: s.modelLabel, identity: s.modelIdentity, lastLoad: s.lastLoad };
  s.loadStarted(label, source, options);
  const info = await runJob('load', `Loading ${label}`, `Could not load ${label}`, () =>
    inOrder((w) => w.load(source, s.backendChoice, Comlink.proxy((p: LoadProgress) => useStore.getState().loadProgressed(p)), options)), {
    cancellable: true,
    retryFor: (e) => (e.name === 'ModelTooLargeError' ? { label: 'Load anyway', run: () => void loadModel(source, { ...options, checkFit: false }) } : undefined),
  });
  if (ticket !== loadTicket) return false; // a newer load replaced this one: its end sets the store
  // A Hub load fills the cache (partly, when it failed or was cancelled mid-download).
  if (source.kind === 'hub') void refreshCachedModels();
  if (!info) {
    // A load that failed before the worker freed the model (a repo that does not exist, a refused
    // size) leaves it loaded, SAEs included: the page shows it again.
    const kept = before.info && before.lastLoad && (await inOrder((w) => w.status())).loaded;
    if (ticket !== loadTicket) return false;
    if (kept) useStore.getState().loadFailedKeeping(before.label, before.info!, before.lastLoad!);
    else {
      useStore.getState().clearSaes(); // the worker unloaded every SAE with the model
      useStore.getState().loadFailed();
    }
    return false;
  }
  useStore.getState().clearSaes(); // the worker unloads every SAE with the model it replaces
  const st = useStore.getState();
  st.loadFinished(info);
  // the worker dropped the branch tree with the model it replaced: forks and lens margins of it would fail
  st.dropTree(before.identity ?? before.label ?? 'the previous model', useStore.getState().modelIdentity ?? label);
  const onLost = Comlink.proxy((reason: string) => useStore.getState().setDeviceLost(reason));
  void inOrder((w) => w.onDeviceLost(onLost));
  if (!info.hasChatTemplate && st.chatTemplate) st.setChatTemplate(false);
  if (before.info?.label !== info.label) checkInterventionsFit(info);
  if (saes) await reattachSaes(saes);
  return true;
}

/**
 * After another model was loaded: the interventions are checked again against it
 * (lib/intervention_fit.ts recheckForModel): every enabled one that does not fit it or whose vector
 * was built on another model is switched off, its row saying why; each off one's reason is
 * recomputed for this model, and one this check had switched off that fits again is ticked again.
 * The notice names, for the model loaded now, the ones that do not fit and the ones ticked again
 * (an earlier notice of this check is replaced or cleared). Nothing is removed.
 */
export function checkInterventionsFit(info: ModelInfo): void {
  const s = useStore.getState();
  const { list, off, back } = recheckForModel(s.interventions, s, info);
  // written only when a row changed: a new list on every load would read as an edit of the experiment (a poster slide's link, the share state)
  if (list.some((d, i) => d !== s.interventions[i])) useStore.setState({ interventions: list });
  const nums = (ids: number[]) => ids.map((id) => `#${list.findIndex((d) => d.id === id) + 1}`).join(', ');
  const plural = (ids: number[]) => (ids.length > 1 ? 's' : '');
  if (!off.length && !back.length) {
    if (s.experimentNotice?.fit) s.setExperimentNotice(null);
    return;
  }
  const onAgain = back.length ? `Intervention${plural(back)} ${nums(back)} switched on again: ${back.length > 1 ? 'they fit' : 'it fits'} ${info.label}` : '';
  if (!off.length) {
    s.setExperimentNotice({ what: onAgain, why: 'switched off earlier for a model it did not fit; untick it to leave it off.', interventions: back, fit: true, tone: 'info' });
    return;
  }
  s.setExperimentNotice({
    what: `Intervention${plural(off)} ${nums(off)} switched off for ${info.label}`,
    why: `made for another model or not fitting this one (each row says why): edit its hook or vector in the editor, or load a model it fits.${onAgain ? ` ${onAgain}.` : ''}`,
    interventions: off,
    fit: true,
  });
}

/** Whether two sources name the same model: the same object (a reload), or the same bundled model, URL or Hub revision. */
function sameModel(a: ModelSource | undefined, b: ModelSource): boolean {
  if (!a) return false;
  if (a === b) return true;
  if (a.kind === 'files' || b.kind === 'files') return false;
  return JSON.stringify(modelOf(a, bundledModelNames())) === JSON.stringify(modelOf(b, bundledModelNames()));
}

/**
 * Loads a Hub repo. A curated chat model (catalog.ts `chat`) then has its chat template switched
 * on, where its tokenizer has one; the user can still switch it off.
 */
export async function loadHubModel(source: Extract<ModelSource, { kind: 'hub' }>): Promise<boolean> {
  if (!(await loadModel(source))) return false;
  noteModelUsed(source);
  const st = useStore.getState();
  if (catalogEntry(source.repo)?.chat && st.info?.hasChatTemplate) st.setChatTemplate(true);
  return true;
}

/** Loads the last model again (a fresh GPU device after a device loss). */
export async function reloadModel(): Promise<boolean> {
  const last = useStore.getState().lastLoad;
  return last ? loadModel(last.source, last.options) : false;
}

/** Files at the top level of a picked folder (nested folders such as onnx/ or original/ are not model files). */
function topLevel(files: { path: string; file: File }[]): { path: string; file: File }[] {
  return files.filter(({ path }) => path.split('/').filter(Boolean).length <= 2);
}

/**
 * Why a picked or dropped folder is not a model folder when it holds model folders one level down
 * (a trial opened fixtures-moe/ and read only "config.json is missing"): the refusal names them.
 * @param files the folder's files, each with its path in the folder (`folder/name`, `folder/sub/name`).
 * @returns the refusal, or null when the folder has config.json or a .gguf file at its top level, or
 *   no model folder inside it (the load then says what is missing).
 */
export function nestedModelRefusal(files: readonly { path: string }[]): string | null {
  const parts = files.map(({ path }) => path.split('/').filter(Boolean));
  const isModelFile = (name: string) => name === 'config.json' || name.endsWith('.gguf');
  if (parts.some((p) => p.length <= 2 && isModelFile(p[p.length - 1]))) return null;
  const inside = [...new Set(parts.filter((p) => p.length === 3 && isModelFile(p[2])).map((p) => p[1]))].sort();
  if (!inside.length) return null;
  return `${parts[0][0]} is not a model folder (no config.json or .gguf file at its top level) but holds ${inside.length === 1 ? 'one' : inside.length}: ${inside.join(', ')}. Open one of them.`;
}

/** The source for a folder's files, each with its path in the folder (`folder/name`): picked or dropped. */
export function sourceFromFiles(files: { path: string; file: File }[]): ModelSource {
  const folder = files[0]?.path.split('/')[0] ?? 'folder';
  return { kind: 'files', label: `${folder} (local folder)`, files: topLevel(files) };
}

/**
 * The files of a folder opened with the File System Access API (showDirectoryPicker), each with
 * its path in the folder: the top level and one level down (`folder/name`, `folder/sub/name`), as
 * far as nestedModelRefusal looks; sourceFromFiles keeps only the top level.
 */
export async function directoryFiles(dir: FileSystemDirectoryHandle): Promise<{ path: string; file: File }[]> {
  const entries = (d: FileSystemDirectoryHandle) => (d as unknown as { values(): AsyncIterable<FileSystemHandle> }).values();
  const files: { path: string; file: File }[] = [];
  for await (const entry of entries(dir)) {
    if (entry.kind === 'file') files.push({ path: `${dir.name}/${entry.name}`, file: await (entry as FileSystemFileHandle).getFile() });
    else for await (const inner of entries(entry as FileSystemDirectoryHandle)) {
      if (inner.kind === 'file') files.push({ path: `${dir.name}/${entry.name}/${inner.name}`, file: await (inner as FileSystemFileHandle).getFile() });
    }
  }
  return files;
}

/**
 * Opens a folder's files as the model, however the folder came (the folder input, the directory
 * picker, a drop): one check and one message for all of them. A parent of model folders is refused
 * before any load, naming the model folders inside (nestedModelRefusal), the banner headed `what`.
 * @param files the folder's files, each with its path in the folder (`folder/name`, `folder/sub/name`).
 * @param load the load to run (model A's, or model B's).
 * @returns whether the model loaded (false when refused or the load failed).
 */
export async function openModelFolder(files: { path: string; file: File }[], load: (source: ModelSource) => Promise<boolean>, what = 'Could not open the folder'): Promise<boolean> {
  const why = nestedModelRefusal(files);
  if (why) {
    useStore.getState().setFailure({ what, why });
    return false;
  }
  return load(sourceFromFiles(files));
}

/**
 * Fills the picker's dropdown with the bundled manifest (the Hub models in this browser's cache are
 * listed by CacheManager when it mounts). Every start path calls it (the default model, a link, the
 * last experiment), so a restored experiment never leaves the dropdown empty.
 */
export function listModels(): void {
  useStore.getState().setLocalModels(bundledModelNames());
}

/** On start: list the bundled models and load the default (stories260K when bundled). */
export async function loadDefaultModel(preferred = 'stories260K'): Promise<void> {
  listModels();
  const names = bundledModelNames();
  const name = names.includes(preferred) ? preferred : names[0];
  if (name) await loadModel(localModelSource(name));
}
