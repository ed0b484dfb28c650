/**
 * The runner's one table of commands. Each row: its name, its usage block (for --help and the
 * generated docs/runner.md: `npx tsx tools/runner_doc.ts --write`), whether it reads --prompt
 * before it runs (then the prompt is required and its warnings go to stderr first), and how it runs
 * on a loaded engine. Adding a command = one row here + its module in cli/ (a study of the studies'
 * table runs from its row: `run: (c) => STUDIES.name.run(c.study, request)`), then regenerate the doc.
 */
import type { Engine } from '../workers/engine/engine';
import type { Sae } from '../workers/engine/sae/sae';
import type { StudyContext } from '../workers/engine/studies/registry';
import type { Args } from './args';
import { GENERATE_USAGE, generateCommand, MARGINS_USAGE, marginsCommand, SINKS_USAGE, sinksCommand } from './analyse';
import { INTERVENTION_USAGE, SWEEP_USAGE, sweepCommand, VECTOR_USAGE, vectorCommand } from './steering';
import { BATCH_USAGE, batchCommand } from './batch';
import { BRANCH_USAGE, branchCommand, FORKS_USAGE, forksCommand } from './branch';
import { PROBE_USAGE, probeCommand } from './probe';
import { WINDOW_USAGE, windowCommand } from './window';
import { PATCHING_USAGE, patchCommand } from './patching';
import { COMPARE_USAGE, compareCommand } from './compare';
import { REPORT_USAGE, reportCommand } from './report';
import { EXPERIMENT_USAGE } from './experiment';
import { SAE_USAGE, saeCommand } from './sae';
import { WEIGHTS_USAGE } from './weights';
import { THREADS_USAGE } from './threads';

/** What a command gets: the loaded engine, the parsed flags, and the runner's shared helpers. */
export interface CommandContext {
  engine: Engine;
  a: Args;
  /** The value of --key. @throws Error "--key is required" when absent. */
  need: (key: string) => string;
  /** SAEs by path, each loaded once for this engine. */
  loadSae: (ref: string) => Promise<Sae>;
  /** --prompt, for a command with `prompt: true` (else ''). */
  prompt: string;
  /** --chat-template true: the prompt goes through the tokenizer's chat template. */
  chatTemplate: boolean;
  /** What a row of the studies' table runs with (engine/studies/registry.ts): `run: (c) => STUDIES.x.run(c.study, req)`. */
  study: StudyContext;
  /** Writes one line to stdout (a command that streams its rows). */
  write: (line: string) => void;
}

/** One runner command. */
export interface Command {
  name: string;
  /** Its block in --help and docs/runner.md: the synopsis line(s) and what it prints. */
  usage: string;
  /** Reads --prompt (required) and prints the prompt's warnings before it runs. */
  prompt?: boolean;
  /** @returns the one JSON object to print, or undefined when the command wrote its own lines. */
  run: (c: CommandContext) => Promise<unknown>;
}

/** Every command, in --help order (an unknown one is refused before the model loads). */
export const COMMANDS: readonly Command[] = [
  { name: 'margins', usage: MARGINS_USAGE, prompt: true, run: (c) => marginsCommand(c.engine, c.a, c.prompt, c.need, c.loadSae) },
  { name: 'sinks', usage: SINKS_USAGE, prompt: true, run: (c) => sinksCommand(c.engine, c.a, c.prompt) },
  { name: 'generate', usage: GENERATE_USAGE, prompt: true, run: (c) => generateCommand(c.engine, c.a, c.prompt, c.loadSae) },
  { name: 'sweep', usage: SWEEP_USAGE, prompt: true, run: (c) => sweepCommand(c.engine, c.a, c.need, c.loadSae) },
  { name: 'vector', usage: VECTOR_USAGE, run: (c) => vectorCommand(c.engine, c.a, c.need) },
  { name: 'batch', usage: BATCH_USAGE, run: async (c) => { await batchCommand(c.engine, c.a, c.write); return undefined; } },
  { name: 'branch', usage: BRANCH_USAGE, prompt: true, run: (c) => branchCommand(c.engine, c.a, c.prompt) },
  { name: 'forks', usage: FORKS_USAGE, prompt: true, run: (c) => forksCommand(c.engine, c.a, c.prompt) },
  { name: 'probe', usage: PROBE_USAGE, run: (c) => probeCommand(c.engine, c.a, c.need) },
  { name: 'window', usage: WINDOW_USAGE, run: (c) => windowCommand(c.engine, c.a, c.need) },
  { name: 'patch', usage: PATCHING_USAGE, run: (c) => patchCommand(c.engine, c.a, c.need) },
  { name: 'compare', usage: COMPARE_USAGE, prompt: true, run: (c) => compareCommand(c.engine, c.a, c.prompt, c.need) },
  { name: 'report', usage: REPORT_USAGE, run: (c) => reportCommand(c.engine, c.a, c.need) },
  { name: 'sae', usage: SAE_USAGE, prompt: true, run: (c) => saeCommand(c.engine, c.a, c.need, c.loadSae) },
];

/** The command called `name`, if any. */
export function findCommand(name: string): Command | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** The first line of --help. */
export const USAGE_TITLE = 'branchpoint — logit-lens margins, attention sinks and generation from the command line';

/** Flags every command (or several) takes, after the commands in --help and docs/runner.md. */
export const FLAG_SECTIONS: readonly { name: string; usage: string }[] = [
  { name: 'Interventions', usage: INTERVENTION_USAGE },
  { name: 'Experiment files', usage: EXPERIMENT_USAGE },
  { name: 'Weight storage', usage: WEIGHTS_USAGE },
  { name: 'Threads', usage: THREADS_USAGE },
  {
    name: 'Flags, futures and models',
    usage: `Flags: --flag value or --flag=value (values may start with "-": --doses -8,-4); --help prints this.
Futures: alternatives separated by "|" form a token set (" Tom| Tommy"); each prints one JSON object.

--model is a folder, or a Hugging Face Hub id org/name[@revision] (revision default main):
  --endpoint URL   a Hub mirror (default $HF_ENDPOINT, else https://huggingface.co)
  $HF_TOKEN        access token for gated or private repos (sent only in the Authorization header)
A Hub model is checked against this machine's memory from its headers before it is downloaded.`,
  },
];

/** The whole --help text, composed from the table. */
export function usageText(): string {
  return [USAGE_TITLE, '', ...COMMANDS.map((c) => c.usage), '', FLAG_SECTIONS.map((s) => s.usage).join('\n\n')].join('\n');
}
