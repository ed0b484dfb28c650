import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { BatchJob, BatchMetric, BatchRow, Progress } from '../../workers/protocol';
import { BATCH_METRICS, fillTemplate as fill, formatOfName, parseTemplate, parseValues } from '../../workers/shared';
import { specRequest } from '../lib/specs';
import { analyse } from './analyse';
import { runJob } from './job';
import { inOrder } from './worker';
import { currentIdentity } from './identity';
import { currentExperiment, restoreExperiment } from './experiment';

/** A shipped study (public/studies/index.json). */
export interface StudyExample { id: string; title: string; template: string; values: string }

/** The examples shipped in public/studies (relative to the site, so a sub-path deployment works). */
export async function studyExamples(): Promise<StudyExample[]> {
  const r = await fetch('studies/index.json');
  if (!r.ok) throw new Error(`studies/index.json: HTTP ${r.status}`);
  return (await r.json()) as StudyExample[];
}

/** Loads a shipped example's template and values into the editor and sets the plot to its x and y. */
export async function loadExample(ex: StudyExample): Promise<void> {
  await runJob('batch', `Loading “${ex.title}”`, `Could not load the example “${ex.title}”`, async () => {
    const get = async (f: string) => {
      const r = await fetch(`studies/${f}`);
      if (!r.ok) throw new Error(`studies/${f}: HTTP ${r.status}`);
      return r.text();
    };
    const [template, values] = await Promise.all([get(ex.template), get(ex.values)]);
    const t = parseTemplate(template);
    // one update: a run (or a test) never sees the example's template beside the old values
    useStore.getState().setBatchExample({ template, values, valuesName: ex.values, x: t.x ?? null, y: (BATCH_METRICS as readonly string[]).includes(t.y ?? '') ? (t.y as BatchMetric) : 'final_margin' });
  });
}

/**
 * Runs the study in the worker: rows appear in the table as they finish; Cancel stops between
 * prompts and keeps the rows done. Template and values are checked here first, so a typo is
 * reported before anything runs.
 */
export async function runBatch(): Promise<void> {
  await runJob('batch', 'Batch study', 'Could not run the batch study', async () => {
    const s = useStore.getState();
    const template = parseTemplate(s.batchTemplate);
    const values = parseValues(s.batchValues, (s.batchValuesName && formatOfName(s.batchValuesName)) || undefined);
    const { specs, specLabels, applied } = specRequest(s.interventions, s.vectors);
    const job: BatchJob & { specs?: typeof specs; specLabels?: string[] } = { template, values, chatTemplate: s.chatTemplate, ...(applied.length ? { specs, specLabels } : {}), ...batchColumns() };
    s.startBatchRows(s.modelLabel ?? '', currentIdentity(), applied);
    if (!s.batchX || !values.columns.includes(s.batchX)) s.setBatchPlot({ x: template.x ?? values.columns[0] });
    s.setJobSteps({ done: 0, total: values.rows.length });
    const onRow = Comlink.proxy((r: BatchRow) => useStore.getState().addBatchRow(r));
    const onProgress = Comlink.proxy((p: Progress) => useStore.getState().setJobSteps(p));
    const result = await inOrder((w) => w.batch(job, onRow, onProgress));
    useStore.getState().setBatchResult(result);
  }, { cancellable: true });
}

/**
 * The probe_score direction (a library vector, read at its hook) and the patch_recovery cell, as
 * set in the view. @throws Error for a library vector without a hook, or a cell without a corrupt template.
 */
function batchColumns(): Pick<BatchJob, 'probe' | 'patchCell'> {
  const s = useStore.getState();
  const c = s.batchColumns;
  const out: Pick<BatchJob, 'probe' | 'patchCell'> = {};
  if (c.probeVectorId) {
    const v = s.vectors.find((x) => x.id === c.probeVectorId);
    if (!v) throw new Error('the probe-score vector is no longer in the library: choose another one');
    if (!v.hook) throw new Error(`vector “${v.name}” names no hook to read the probe score at: build it (or a probe direction) at a hook`);
    out.probe = { hook: v.hook, vector: v.vector.slice() };
  }
  if (c.patch) out.patchCell = { hook: c.patchHook, layer: c.patchLayer, position: c.patchPosition };
  return out;
}

/**
 * Opens one prompt of the study in the workbench: its prompt and futures, analysed, on the margin
 * heatmap. The experiment open before the first row is kept whole (store batchReturn) for
 * backToExperiment; opening further rows keeps that first one.
 */
export async function openRow(r: BatchRow): Promise<void> {
  const s = useStore.getState();
  if (!s.batchReturn) s.setBatchReturn(currentExperiment());
  // a study's system prompt, tools, enable_thinking and chat template come with its row (the template in the form ran it)
  let t: ReturnType<typeof parseTemplate> | null = null;
  try { t = parseTemplate(s.batchTemplate); } catch { /* the form was edited since: the row's texts alone */ }
  const turn = t ? { ...(t.chatTemplate ? { chatTemplate: true } : {}), ...(t.tools ? { tools: t.tools } : {}), ...(t.system !== undefined ? { system: fill(t.system, r.vars) } : {}), ...(t.enableThinking !== undefined ? { enableThinking: t.enableThinking } : {}) } : {};
  const corrupt = t?.corrupt !== undefined ? fill(t.corrupt, r.vars) : null;
  useStore.setState({ prompt: r.prompt, ...turn, good: { mode: r.goodMode, value: r.good }, bad: { mode: r.badMode, value: r.bad }, view: 'margins' });
  if (corrupt !== null) s.setPatchingSettings({ clean: r.prompt, corrupt });
  await analyse();
}

/** "Back to my experiment": restores the experiment a batch row replaced, exactly (lib/experiment_state.ts apply), and reruns it. */
export async function backToExperiment(): Promise<void> {
  const e = useStore.getState().batchReturn;
  if (!e) return;
  useStore.getState().setBatchReturn(null);
  await restoreExperiment(e, 'experiment');
}
