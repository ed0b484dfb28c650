import * as fs from 'node:fs';
import * as path from 'node:path';
import { bundledModelName, experimentSpecs, readExperiment, toolCallInput, type Experiment } from '../workers/engine/experiment';
import { scanBundledModels } from '../tools/bundled_models';
import type { RawFlags } from './flags';

/** Where the app's bundled models live in this checkout (public/models/<name>). */
const BUNDLED = path.join(import.meta.dirname, '..', 'public', 'models');

export const EXPERIMENT_USAGE = `  --experiment FILE  an experiment saved by the workbench (docs/experiment-format.md): its model, prompt,
                     futures, interventions (vectors inline) and generation settings; flags given too win`;

/** The runner's --model for an experiment's model. @throws Error for a model the runner cannot open by itself. */
function modelFlag(e: Experiment): string {
  const m = e.model;
  switch (m.kind) {
    case 'bundled': {
      // only a name of the bundled manifest becomes a path (never "../../x")
      return path.join(BUNDLED, bundledModelName(m.name, scanBundledModels(BUNDLED).map((b) => b.name)));
    }
    case 'hub': return `${m.repo}@${m.revision}`;
    case 'url': throw new Error(`the experiment's model is served at ${m.url}; pass --model with a local copy or a Hub id`);
    case 'local': throw new Error(`the experiment used a local folder ("${m.name}"); pass --model with that folder`);
  }
}

/** A future as the runner's flag: text as is, a tool call as {"tool_call": …} (cli/chat_turn.ts). @throws Error for a future written as ids (the runner takes text). */
function futureFlag(f: Experiment['good'], which: string): string {
  if (f.mode === 'tool') return JSON.stringify({ tool_call: toolCallInput(f.value) });
  if (f.mode !== 'text') throw new Error(`the experiment's ${which} future is written as token ids; the runner takes text futures`);
  return f.value;
}

/**
 * `--experiment FILE`: fills the flags the file determines (model, prompt, futures, chat template,
 * generation settings) that the command takes, unless given on the command line, and appends the experiment's enabled
 * interventions, in order, with their vectors inline, so a figure made in the browser regenerates
 * with the same numbers.
 * @throws Error naming the file: unreadable, invalid (ExperimentError), or a model/future the runner cannot take.
 */
export function applyExperimentFlags(raw: RawFlags, takes: (name: string) => boolean): void {
  const file = raw.get('experiment')?.[0];
  if (!file) return;
  if (!fs.existsSync(file)) throw new Error(`--experiment ${file}: no such file`);
  let e: Experiment;
  try {
    e = readExperiment(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`--experiment ${file}: ${(err as Error).message}`);
  }
  const fill = (key: string, value: () => string) => { if (takes(key) && !raw.has(key)) raw.set(key, [value()]); };
  fill('model', () => modelFlag(e));
  fill('prompt', () => e.prompt);
  fill('good', () => futureFlag(e.good, 'good'));
  fill('bad', () => futureFlag(e.bad, 'bad'));
  fill('chat-template', () => String(e.chatTemplate));
  // the system prompt and tools apply only with the chat template (as in the workbench)
  if (e.chatTemplate && e.system !== undefined) fill('system', () => e.system!);
  if (e.chatTemplate && e.tools.length) fill('tools', () => JSON.stringify(e.tools));
  if (e.chatTemplate && e.enableThinking !== undefined) fill('enable-thinking', () => String(e.enableThinking));
  fill('max-new-tokens', () => String(e.generation.maxNewTokens));
  fill('temperature', () => String(e.generation.temperature));
  fill('top-k', () => String(e.generation.topK));
  fill('seed', () => String(e.generation.seed));
  const enabled = experimentSpecs(e);
  const specs = enabled.map((s) => JSON.stringify({ ...s, vector: s.vector && typeof s.vector !== 'string' ? Array.from(s.vector as ArrayLike<number>) : s.vector }));
  if (takes('intervention') && specs.length) {
    raw.set('intervention', [...specs, ...(raw.get('intervention') ?? [])]);
    // the numbers printed are steered ones: say so, as the workbench marks a steered view
    process.stderr.write(`note: ${file}: its ${enabled.length} enabled intervention${enabled.length === 1 ? '' : 's'} appl${enabled.length === 1 ? 'ies' : 'y'} (${enabled.map((s, i) => `#${i + 1} ${s.type} at ${s.hook}`).join('; ')}); the results are steered\n`);
  }
}
