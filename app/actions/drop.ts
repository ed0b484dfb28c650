/**
 * Files dropped anywhere on the page, sent where they belong (lib/drop_kind.ts decides) through the
 * same actions as the pickers, so a drop gets the same checks and messages as the picker would.
 */
import { useStore } from '../store';
import { classifyDrop, needsJsonKeys, type DropTarget } from '../lib/drop_kind';
import { loadModel, openModelFolder } from './model';
import { loadSae, saeSourceFromFiles } from './sae';
import { importVectorFile } from './vectors';
import { openExperimentFile } from './experiment';
import { loadProbeFile } from './probe';

/** A dropped file with its path inside the drop (`folder/name` for a dropped folder). */
export interface DroppedFile { path: string; file: File }

/** The top-level keys of a JSON file, or null when it is not a JSON object (a parse error included). */
async function jsonKeys(file: File): Promise<string[] | null> {
  try {
    const v: unknown = JSON.parse(await file.text());
    return v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v) : null;
  } catch {
    return null;
  }
}

/**
 * Opens dropped files: a model folder loads as the model, an SAE loads, a vector joins the library,
 * an experiment is restored, a labelled set fills the Probes view, a values table the Batch view;
 * the view that shows it opens. Anything else leaves the experiment as it is and the banner says why.
 * @returns where the drop went.
 */
export async function openDrop(files: DroppedFile[]): Promise<DropTarget> {
  const s = useStore.getState();
  const target = classifyDrop(files, needsJsonKeys(files) ? await jsonKeys(files[0].file) : undefined);
  const one = files[0]?.file;
  switch (target.kind) {
    case 'refused': s.setFailure({ what: 'Could not open the dropped files', why: target.why }); break;
    case 'model': await openModelFolder(files, loadModel, 'Could not open the dropped folder'); break;
    case 'sae': s.setView('sae'); await loadSae(saeSourceFromFiles(files)); break;
    case 'vector': s.setView('vectors'); await importVectorFile(one); break;
    case 'experiment': await openExperimentFile(one); break;
    case 'promptSet': s.setView('probe'); await loadProbeFile(one); break;
    case 'studyTable': s.setView('batch'); s.setBatchInput({ values: await one.text(), valuesName: one.name }); break;
  }
  return target;
}

/** Every file of a drop, dropped folders walked (their paths start with the folder's name). */
export async function droppedFiles(dt: DataTransfer): Promise<DroppedFile[]> {
  const entries = Array.from(dt.items ?? [], (i) => (i.kind === 'file' ? i.webkitGetAsEntry?.() ?? null : null));
  if (!entries.length || entries.some((e) => !e)) return Array.from(dt.files, (file) => ({ path: file.name, file }));
  const out: DroppedFile[] = [];
  const walk = async (e: FileSystemEntry, prefix: string): Promise<void> => {
    if (e.isFile) {
      out.push({ path: `${prefix}${e.name}`, file: await new Promise<File>((res, rej) => (e as FileSystemFileEntry).file(res, rej)) });
    } else if (e.isDirectory) {
      const reader = (e as FileSystemDirectoryEntry).createReader();
      for (;;) {
        const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
        if (!batch.length) break;
        for (const c of batch) await walk(c, `${prefix}${e.name}/`);
      }
    }
  };
  for (const e of entries) await walk(e!, '');
  return out;
}
