import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { LibraryVector, Progress, VectorFormat, VectorRequest } from '../../workers/protocol';
import type { ContrastSet, LibraryEntry } from '../store/vectors';
import { download } from '../lib/export';
import { runJob } from './job';
import { inOrder, messageOf } from './worker';
import { sameVectorIn } from '../lib/same_vector';

/** The contrastive set the library panel starts with (public/steering/). */
export const DEFAULT_SET = 'steering/happy_sad.json';

/**
 * A contrastive set file ({name, positive: [...], negative: [...], suggested?: {prompt, good, bad, alpha?}}) checked field by field.
 * @throws Error saying which field is missing or not a list of strings.
 */
export function parseContrastSet(json: unknown, file: string): ContrastSet {
  const o = (typeof json === 'object' && json !== null ? json : {}) as Record<string, unknown>;
  const texts = (k: 'positive' | 'negative') => {
    const v = o[k];
    if (!Array.isArray(v) || v.some((t) => typeof t !== 'string')) throw new Error(`${file}: "${k}" must be a list of texts`);
    return v as string[];
  };
  const sg = o.suggested as Record<string, unknown> | undefined;
  const alpha = sg && typeof sg.alpha === 'number' && Number.isFinite(sg.alpha) ? { alpha: sg.alpha } : {};
  const suggested = sg && typeof sg.prompt === 'string' && typeof sg.good === 'string' && typeof sg.bad === 'string' ? { prompt: sg.prompt, good: sg.good, bad: sg.bad, ...alpha } : null;
  return { name: typeof o.name === 'string' ? o.name : file, positive: texts('positive'), negative: texts('negative'), suggested };
}

/** Fetches the default contrastive set into the library panel (once; an edited set is kept). */
export async function loadDefaultSet(): Promise<void> {
  if (useStore.getState().contrastSet) return;
  try {
    const r = await fetch(new URL(DEFAULT_SET, document.baseURI));
    if (!r.ok) throw new Error(`${DEFAULT_SET}: HTTP ${r.status}`);
    const set = parseContrastSet(await r.json(), DEFAULT_SET);
    if (!useStore.getState().contrastSet) useStore.getState().setContrastSet(set);
  } catch (e) {
    useStore.getState().setFailure({ what: 'Could not load the default contrastive set', why: messageOf(e) });
  }
}

/** A vector put into the library, or found there already. */
export interface LibraryAddition {
  entry: LibraryEntry;
  /** false: an identical vector (lib/same_vector.ts) was in the library, and `entry` is that one. */
  added: boolean;
}

/** Adds a vector to the library (with the α it is applied with), unless it holds an identical one, and makes it the sweep's vector when the sweep has none. */
function addToLibrary(v: LibraryVector, name: string, alpha?: number): LibraryAddition {
  const s = useStore.getState();
  const same = sameVectorIn(s.vectors, v, name);
  const entry = same ?? s.addVector(v, name, alpha);
  if (!s.sweepSettings.vectorId) s.setSweepSettings({ vectorId: entry.id });
  return { entry, added: !same };
}

/**
 * Builds a steering vector in the worker (progress per text read) and adds it to the library (once:
 * see addToLibrary), to be applied with `alpha` (LibraryEntry.alpha; default 1).
 */
export async function buildVector(req: VectorRequest, name: string, alpha?: number): Promise<LibraryAddition | null> {
  const method = req.method === 'caa' ? 'CAA' : 'ActAdd';
  return runJob('vector', `Building the ${method} vector at ${req.hook}`, `Could not build the ${method} vector`, async () => {
    const onProgress = Comlink.proxy((p: Progress) => useStore.getState().setJobSteps(p));
    const v = await inOrder((w) => w.steeringVector(req, onProgress));
    return addToLibrary(v, name, alpha);
  });
}

/** Reads a vector file (.npy, .safetensors, .json) in the worker, which checks it against the model, and adds it to the library (once). */
export async function importVectorFile(file: File): Promise<LibraryAddition | null> {
  return runJob('import', `Importing ${file.name}`, `Could not import the vector file ${file.name}`, async () => {
    const bytes = new Uint8Array(await file.arrayBuffer());
    const v = await inOrder((w) => w.importVector(file.name, Comlink.transfer(bytes, [bytes.buffer])));
    return addToLibrary(v, file.name);
  });
}

/** A file name stem from a vector's name. */
function stem(name: string): string {
  return name.replace(/\.(npy|safetensors|json)$/i, '').replace(/[^\w.-]+/g, '_').replace(/^_+|_+$/g, '') || 'vector';
}

/** Saves a library vector as .npy, .safetensors or .json (the last two with its provenance). */
export async function exportVector(entry: LibraryEntry, format: VectorFormat): Promise<void> {
  await runJob('export', `Saving ${entry.name} as .${format}`, `Could not save ${entry.name} as .${format}`, async () => {
    const { id: _id, name: _name, ...v } = entry;
    const bytes = await inOrder((w) => w.exportVector(format, v));
    download(`${stem(entry.name)}.${format}`, new Blob([bytes as BlobPart], { type: format === 'json' ? 'application/json' : 'application/octet-stream' }));
  });
}
