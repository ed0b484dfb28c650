import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { Progress, ProbeRequest, ReportLabelledSet } from '../../workers/protocol';
import { parseLabelledSet } from '../../workers/shared';
import type { LibraryEntry } from '../store/vectors';
import { runJob } from './job';
import { inOrder, messageOf } from './worker';
import { currentIdentity } from './identity';
import { chatTurnOf } from '../lib/experiment_request';
import { turnOf } from '../lib/stale';

/** Example probe sets shipped in public/ (file, menu name). */
export const PROBE_EXAMPLES: { file: string; name: string }[] = [
  { file: 'probes/he_she.json', name: 'he vs she (who the story is about)' },
  { file: 'steering/happy_sad.json', name: 'happy vs sad (story mood)' },
];

/** A set's prompts as edited: one per non-empty line, trimmed. */
export const setLines = (text: string) => text.split(/\r?\n/).map((t) => t.trim()).filter(Boolean);

/** Puts a labelled set into the probe view's editor. */
function showSet(source: string, text: string): void {
  const set = parseLabelledSet(source, text);
  useStore.getState().setProbeSettings({
    source, positive: set.positive.join('\n'), negative: set.negative.join('\n'), classes: set.classes,
    ...(set.position !== undefined ? { position: String(set.position) } : {}),
    ...(set.futures ? { good: set.futures.good, bad: set.futures.bad } : {}),
  });
}

/** Loads a shipped example set into the editor. */
export async function loadProbeExample(file: string): Promise<void> {
  try {
    const r = await fetch(new URL(file, document.baseURI));
    if (!r.ok) throw new Error(`${file}: HTTP ${r.status}`);
    showSet(file, await r.text());
  } catch (e) {
    useStore.getState().setFailure({ what: 'Could not load the example probe set', why: messageOf(e) });
  }
}

/** Reads a set the user picked (.json, .jsonl, .csv) into the editor; a bad file says why and changes nothing. */
export async function loadProbeFile(file: File): Promise<void> {
  try {
    showSet(file.name, await file.text());
    useStore.getState().setFailure(null);
  } catch (e) {
    useStore.getState().setFailure({ what: `Could not read the probe set ${file.name}`, why: messageOf(e) });
  }
}

/** "last" or an integer index. @throws Error for anything else. */
export function probePosition(text: string): ProbeRequest['position'] {
  const t = text.trim();
  if (t === '' || t === 'last') return 'last';
  if (!/^-?\d+$/.test(t)) throw new Error(`position "${text}": write "last" or a token index (negative counts from the end: -1 = last)`);
  return Number(t);
}

/**
 * The labelled set as edited in the Probes view (shared with the report's prompt set).
 * @throws Error for a bad position.
 */
export function probeSet(): ReportLabelledSet & { classes: [string, string]; source: string } {
  const set = useStore.getState().probeSettings;
  return { positive: setLines(set.positive), negative: setLines(set.negative), classes: set.classes, position: probePosition(set.position), source: set.source || 'pasted' };
}

/**
 * Runs the probes of the view's set (DESIGN.md §3 "Linear probes per layer"): progress counts
 * prompts read and layers probed; Cancel stops it and keeps the probes on display.
 */
export async function runProbe(): Promise<void> {
  await runJob('probe', 'Linear probes per layer', 'Could not run the probes', async () => {
    const s = useStore.getState();
    const { positive, negative, classes, position, source } = probeSet();
    const req: ProbeRequest = { positive, negative, classes, position, ...chatTurnOf(s), folds: s.probeSettings.folds, seed: s.probeSettings.seed };
    s.setJobSteps({ done: 0, total: positive.length + negative.length + (s.info?.nLayers ?? 0) + 1 });
    const onProgress = Comlink.proxy((p: Progress) => useStore.getState().setJobSteps(p));
    const result = await inOrder((w) => w.probe(req, onProgress));
    useStore.getState().setProbe({ result, modelLabel: s.modelLabel ?? '', computedWith: currentIdentity(), source, positive: [...positive], negative: [...negative], ...turnOf(s) });
  }, { cancellable: true });
}

/**
 * Adds row `row`'s difference-of-means direction to the vector library, at the hook it was read
 * at (it is the CAA vector of the two sets there, Rimsky et al. arXiv 2312.06681).
 */
export function sendProbeDirection(row: number): LibraryEntry | null {
  const s = useStore.getState();
  const p = s.probe;
  if (!p) return null;
  const r = p.result;
  const position = r.position === 'last' ? 'last' : `index ${r.position}`;
  const entry = s.addVector({
    vector: r.directions[row].slice(), dModel: r.directions[row].length, hook: r.hooks[row], model: p.modelLabel,
    provenance: { method: 'caa', position, positive: p.positive, negative: p.negative }, createdAt: new Date().toISOString(),
  }, `probe ${r.classes[1]} − ${r.classes[0]} @ ${r.hooks[row]}`);
  if (!s.sweepSettings.vectorId) s.setSweepSettings({ vectorId: entry.id });
  return entry;
}
