/**
 * Where files dropped on the page go (drag and drop, issue 29): one decision, made from the files'
 * names and, for a lone JSON file, its top-level keys — the same files each picker takes:
 * - a model: a folder or files with config.json and weights (model.safetensors, shards with their
 *   index, or a model.gguf), or a lone .gguf — the model bar's Open folder…;
 * - an SAE: a SAELens folder (cfg.json + sae_weights.safetensors) or a Gemma Scope .npz — the SAE view;
 * - a vector: a lone .npy or .safetensors, or JSON with "vector" — the Vectors tab's Import;
 * - an experiment: JSON with "format": "branchpoint-experiment" — the Experiment row's Open file…;
 * - a prompt set: JSON with "classes", "positive" and "negative" (a labelled set) — the Probes view;
 * - a study table: a values table (.csv, .tsv, .jsonl, .ndjson) — the Batch view's Load values file….
 * Anything else is refused with what was dropped and what is taken.
 */

/** A dropped file as the classifier sees it: its path inside the drop (folder/name, or name). */
export interface DroppedName { readonly path: string }

/** What a drop is, or why it is refused. */
export type DropTarget =
  | { readonly kind: 'model' | 'sae' | 'vector' | 'experiment' | 'promptSet' | 'studyTable' }
  | { readonly kind: 'refused'; readonly why: string };

/** What each kind is, for messages. */
export const DROP_KINDS: Readonly<Record<Exclude<DropTarget['kind'], 'refused'>, string>> = {
  model: 'a model folder (config.json, tokenizer.json and model.safetensors or model.gguf) or its files',
  sae: 'an SAE folder (cfg.json + sae_weights.safetensors) or a Gemma Scope params.npz',
  vector: 'a vector file (.npy, .safetensors, or JSON with "vector")',
  experiment: 'an experiment file (.json with "format": "branchpoint-experiment")',
  promptSet: 'a labelled prompt set (.json with "classes", "positive" and "negative")',
  studyTable: 'a study values table (.csv, .tsv, .jsonl or .ndjson)',
};

const TAKEN = `Drop ${Object.values(DROP_KINDS).join('; or ')}.`;
const base = (p: string) => p.split('/').filter(Boolean).pop() ?? p;
const ext = (p: string) => { const b = base(p).toLowerCase(); const i = b.lastIndexOf('.'); return i > 0 ? b.slice(i + 1) : ''; };

/**
 * Decides where a drop goes.
 * @param files the dropped files (a dropped folder: every file in it, paths starting with its name).
 * @param jsonKeys for a drop of one .json file: its top-level keys (null when it is not a JSON object:
 *   the drop is refused saying so); ignored otherwise.
 * @returns the kind, or `refused` with a message naming what was dropped and what is taken.
 */
export function classifyDrop(files: readonly DroppedName[], jsonKeys?: readonly string[] | null): DropTarget {
  if (!files.length) return { kind: 'refused', why: `Nothing to open in that drop (no files). ${TAKEN}` };
  const names = new Set(files.map((f) => base(f.path).toLowerCase()));
  const exts = files.map((f) => ext(f.path));
  if (names.has('config.json') && (exts.includes('safetensors') || exts.includes('gguf'))) return { kind: 'model' };
  if (names.has('cfg.json') && names.has('sae_weights.safetensors')) return { kind: 'sae' };
  const what = files.length === 1 ? `“${base(files[0].path)}”` : `${files.length} files (${[...names].slice(0, 4).join(', ')}${names.size > 4 ? ', …' : ''})`;
  if (files.length > 1) {
    const why = names.has('config.json') ? 'a model folder needs its weights (model.safetensors or model.gguf) beside config.json'
      : names.has('cfg.json') ? 'an SAE folder needs sae_weights.safetensors beside cfg.json'
      : 'several files are taken only as a model folder or an SAE folder';
    return { kind: 'refused', why: `Cannot open ${what}: ${why}. ${TAKEN}` };
  }
  switch (exts[0]) {
    case 'gguf': return { kind: 'model' };
    case 'npz': return { kind: 'sae' };
    case 'npy': case 'safetensors': return { kind: 'vector' };
    case 'csv': case 'tsv': case 'jsonl': case 'ndjson': return { kind: 'studyTable' };
    case 'json': {
      if (jsonKeys === undefined) throw new Error('classifyDrop: a lone .json file needs its top-level keys');
      if (jsonKeys === null) return { kind: 'refused', why: `Cannot open ${what}: it is not a JSON object. ${TAKEN}` };
      const keys = new Set(jsonKeys);
      if (keys.has('format')) return { kind: 'experiment' }; // the reader checks the tag and says what is wrong with it
      if (keys.has('vector')) return { kind: 'vector' };
      if (keys.has('classes') && keys.has('positive') && keys.has('negative')) return { kind: 'promptSet' };
      return { kind: 'refused', why: `Cannot open ${what}: a JSON file with keys ${jsonKeys.slice(0, 6).map((k) => `"${k}"`).join(', ') || '(none)'} is none of the files taken here. ${TAKEN}` };
    }
    default: return { kind: 'refused', why: `Cannot open ${what}: files ending .${exts[0] || '(no extension)'} are not taken here. ${TAKEN}` };
  }
}

/** Whether a drop of these files needs the keys of its one .json file to be classified. */
export const needsJsonKeys = (files: readonly DroppedName[]): boolean => files.length === 1 && ext(files[0].path) === 'json';
