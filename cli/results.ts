/**
 * The runner's `results` and `nnsight` subcommands (docs/results-format.md). `results` computes an
 * experiment's sections — logit-lens margins, the patching grid (--corrupt), the dose–response sweep
 * (the experiment's Dose–response setup), the intervention window (its enabled interventions) — and
 * writes them as a results file, the same schema the nnsight script writes. `nnsight` writes that
 * script (workers/engine/studies/export/nnsight_script.ts) without loading a model.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Engine } from '../workers/engine/engine';
import { readExperiment, type Experiment } from '../workers/engine/experiment';
import { patchingGrid } from '../workers/engine/studies/patching';
import { doseResponse } from '../workers/engine/studies/sweep';
import { interventionWindow } from '../workers/engine/studies/window';
import { NNSIGHT_VERSION, nnsightPlan, nnsightScript, type NnsightPatching } from '../workers/engine/studies/export/nnsight_script';
import { parseResults, RESULTS_FORMAT, RESULTS_VERSION } from '../workers/engine/studies/export/results_file';
import { gridRows } from '../workers/engine/studies/report_json';
import { oneOf, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, GOOD, INTERVENTION, MAX_NEW_TOKENS, PROGRESS, PROMPT } from './shared_flags';
import { interventionsFromArgs } from './steering';
import { runShapeOf } from '../workers/engine/studies/resolve_interventions';

const CORRUPT = text().describe('a corrupted prompt (as many tokens as the prompt): adds the patching grid at hook_resid_pre');
const DIRECTION = oneOf(['denoise', 'noise'] as const).default('denoise').describe('the patching grid: clean into corrupt (denoise) or corrupt into clean (noise)');

export const RESULTS_FLAGS = {
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(), 'chat-template': CHAT_TEMPLATE, intervention: INTERVENTION,
  'max-new-tokens': MAX_NEW_TOKENS, corrupt: CORRUPT, direction: DIRECTION, progress: PROGRESS,
  out: text('FILE', { nonEmpty: true }).required().describe('the results file to write (docs/results-format.md)'),
};
export type ResultsFlags = Values<typeof RESULTS_FLAGS>;

export const RESULTS_ABOUT = `results needs --experiment; writes a results file (docs/results-format.md) with where_ran "branchpoint runner":
lens {ids, tokens, lens_margin [n_layers+1][n_tokens], final_margin}, patch (with --corrupt), sweep (the experiment's
Dose–response setup) and window (its enabled interventions, greedy, outcome = mean margin over N steps); prints {out, sections}.
The nnsight script (branchpoint nnsight) writes the same sections: compare the two files for the parity check.`;

export const NNSIGHT_FLAGS = {
  'model-id': text('ID', { nonEmpty: true }).describe("the model the script loads: a Hub id or folder (default: the experiment's Hub repo or model name)"),
  corrupt: CORRUPT, direction: DIRECTION,
  out: text('FILE', { nonEmpty: true }).required().describe('the Python script to write'),
};
export type NnsightFlags = Values<typeof NNSIGHT_FLAGS>;

export const NNSIGHT_ABOUT = `nnsight needs --experiment; writes a self-contained Python script (nnsight ${NNSIGHT_VERSION}, REMOTE = False at its top: set True
for NDIF) that computes the experiment's sections and writes them as a results file; no model is loaded (the command takes no model). Prints {out, sections}.`;

/** The experiment named by --experiment. @throws Error when it is not given or not valid. */
function experimentOf(file: string | undefined): Experiment {
  if (!file) throw new Error('--experiment FILE is required: the sections come from the experiment');
  try {
    return readExperiment(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`--experiment ${file}: ${(e as Error).message}`);
  }
}

const patchingOf = (f: { corrupt?: string; direction: 'denoise' | 'noise' }): NnsightPatching | undefined =>
  f.corrupt === undefined ? undefined : { corrupt: f.corrupt, hook: 'resid_pre', direction: f.direction };

/** Before any model loads: the experiment readable and expressible as a script (the sections both write). @throws Error. */
export function checkExport(f: { experiment?: string; corrupt?: string; direction: 'denoise' | 'noise' }): void {
  nnsightPlan(experimentOf(f.experiment), patchingOf(f));
}

/** `branchpoint nnsight`: the script, written without a model. */
export function nnsightCommand(f: NnsightFlags & { experiment?: string }): unknown {
  const e = experimentOf(f.experiment);
  const script = nnsightScript(e, patchingOf(f), f['model-id']);
  fs.writeFileSync(f.out, script);
  const plan = nnsightPlan(e, patchingOf(f));
  return { out: f.out, sections: ['lens', ...(plan.patching ? ['patch'] : []), ...(plan.sweep ? ['sweep'] : []), ...(plan.window ? ['window'] : [])] };
}

/** The model's name in a results file: a Hub id as given, a folder by its name. */
const modelName = (m: string): string => (fs.existsSync(m) ? path.basename(path.resolve(m)) : m);

/** `branchpoint results`: every section the experiment asks for, written as one results file (checked by its own reader before writing). */
export async function resultsCommand(engine: Engine, f: ResultsFlags & { experiment?: string; model: string }): Promise<unknown> {
  const e = experimentOf(f.experiment);
  const plan = nnsightPlan(e, patchingOf(f));
  const { prompt, 'chat-template': chatTemplate } = f;
  const good = { text: f.good }, bad = { text: f.bad };
  const tell = f.progress ? (what: string) => process.stderr.write(`${what}\n`) : () => undefined;
  const N = f['max-new-tokens'];
  const interventions = await interventionsFromArgs(engine, f.intervention, runShapeOf(engine, { prompt, chatTemplate }, N));
  const out: Record<string, unknown> = { format: RESULTS_FORMAT, version: RESULTS_VERSION, model: modelName(f.model), where_ran: 'branchpoint runner', produced_by: 'branchpoint runner', experiment: e };
  tell('lens');
  const a = await engine.analyse({ prompt, chatTemplate, good, bad, interventions });
  out.lens = { ids: a.ids, tokens: a.tokens, lens_margin: gridRows(a.lensMargin, a.ids.length), final_margin: Array.from(a.finalMargin) };
  if (plan.patching) {
    tell('patch');
    const r = await patchingGrid(engine, { clean: prompt, corrupt: plan.patching.corrupt, chatTemplate, good, bad, hook: 'resid_pre', direction: plan.patching.direction, metric: 'final' });
    out.patch = {
      hook: r.hookTemplate, direction: r.direction, metric: 'final', clean: prompt, corrupt: plan.patching.corrupt, clean_tokens: r.cleanTokens,
      clean_margin: r.cleanMargin, corrupt_margin: r.corruptMargin,
      recovery: gridRows(r.recovery, r.nCols).map((row) => row.map((x) => (Number.isFinite(x) ? x : null))),
    };
  }
  if (plan.sweep) {
    tell('sweep');
    const s = plan.sweep;
    const layers = s.layers ?? Array.from({ length: engine.spec.nLayers }, (_, l) => l);
    const r = await doseResponse(engine, { prompt, chatTemplate, good, bad, template: { hook: `blocks.{l}.hook_resid_${s.at}`, type: 'add', vector: s.vector }, layers, doses: s.doses });
    out.sweep = { layers: r.layers, doses: r.doses, hooks: r.hooks, margin: r.margin, unsteered_margin: r.unsteeredMargin };
  }
  if (plan.window) {
    tell('window');
    const r = await interventionWindow(engine, { prompt, chatTemplate, good, bad, interventions, maxNewTokens: N, temperature: 0 });
    out.window = { max_new_tokens: r.maxNewTokens, ks: r.ks, outcome: r.outcome, unsteered_outcome: r.unsteered.outcome, point_of_no_return: r.pointOfNoReturn };
  }
  parseResults(JSON.parse(JSON.stringify(out)));
  fs.writeFileSync(f.out, JSON.stringify(out));
  return { out: f.out, sections: Object.keys(out).filter((k) => ['lens', 'patch', 'sweep', 'window'].includes(k)) };
}
