/**
 * *Export as nnsight script* and *Open results…* (docs/results-format.md): the current experiment as
 * a Python script for nnsight / NDIF, and a results file (from that script, the runner or another
 * browser) shown read-only in the Opened results view. Neither changes the experiment; a failure says
 * what and why (the experiment bar's notice, the error banner).
 */
import { useStore } from '../store';
import { nnsightModelId, nnsightScript, readResults, type NnsightPatching } from '../../workers/shared';
import { download } from '../lib/export';
import { currentExperiment } from './experiment';
import { runJob } from './job';

/** The Patching view's grid when the script can compute it: hook_resid_pre, final metric, on the experiment's own prompt. */
function patchingForScript(prompt: string): { patching?: NnsightPatching; left: string | null } {
  const p = useStore.getState().patchingSettings;
  if (!p.corrupt.trim()) return { left: null };
  if (p.hook !== 'resid_pre' || p.metric !== 'final') return { left: `the patching grid (${p.hook}, ${p.metric} metric) is left out: the script patches hook_resid_pre with the final metric` };
  if (p.clean !== prompt) return { left: 'the patching grid is left out: its clean prompt is not the experiment\'s prompt' };
  return { patching: { corrupt: p.corrupt, hook: 'resid_pre', direction: p.direction }, left: null };
}

/** Downloads the experiment as an nnsight script; what the script cannot express is refused, naming it. */
export function exportNnsightScript(): void {
  const s = useStore.getState();
  try {
    const e = currentExperiment();
    const { patching, left } = patchingForScript(e.prompt);
    const script = nnsightScript(e, patching);
    const stem = e.prompt.slice(0, 32).replace(/[^\w]+/g, '-').replace(/^-|-$/g, '') || 'experiment';
    download(`branchpoint-${stem}.nnsight.py`, new Blob([script], { type: 'text/x-python' }));
    // A model that is not a Hub repo: say what MODEL_ID holds and what to do (the script stops with the same advice).
    const m = nnsightModelId(e);
    const named = e.model.kind === 'bundled' ? `the bundled model ${e.model.name} is on no Hugging Face Hub under that name, so MODEL_ID is its HF files in the Branchpoint repository, "${m.id}" (run the script from the repository root, or point MODEL_ID at a copy of that folder)` : `MODEL_ID is the ${e.model.kind} model's name "${m.id}": set it to its Hugging Face id or a folder of its HF files`;
    const why = [left, m.folder ? `${named}; the script stops with this advice while that folder is missing.` : null].filter(Boolean).join('. ');
    s.setExperimentNotice(why ? { what: left ? 'nnsight script exported without the patching grid' : 'nnsight script exported: check MODEL_ID at its top', why, unread: true } : null);
  } catch (err) {
    s.setExperimentNotice({ what: 'The experiment could not be exported as an nnsight script', why: (err as Error).message, unread: true });
  }
}

/**
 * Opens a results file in the Opened results view (read-only), as a job (a large file takes a while to
 * check); a file that is not one is refused in the error banner, naming the field and why, and
 * nothing changes.
 */
export async function openResultsFile(file: File): Promise<void> {
  await runJob('results', 'Opening results file', `${file.name} could not be opened as results`, async () => {
    const results = readResults(await file.text());
    useStore.getState().setOpenedResults({ file: file.name, results });
    useStore.getState().setView('results');
  });
}
