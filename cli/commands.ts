/**
 * The runner's one table of commands. Each row: its name, its flags (a schema, cli/flags.ts: parsing,
 * validation and the usage of --help and docs/runner.md — `npx tsx tools/runner_doc.ts --write` — all
 * derive from it), the prose after its flag lines, whether it reads --prompt before it runs (then its
 * warnings go to stderr first), optional checks before any model work (`check`) and against the
 * model's config (`checkSpec`, before any forward pass), and how it runs on a loaded engine.
 * Adding a command = one row here + its module in cli/ (its schema and its function).
 */
import type { Engine } from '../workers/engine/engine';
import type { ModelSpec } from '../workers/engine/arch/spec';
import type { Sae } from '../workers/engine/sae/sae';
import type { ModelFiles } from '../workers/engine/io/model_files';
import type { StudyContext } from '../workers/engine/studies/registry';
import { flagLines, usageBlock, type Schema, type Values } from './flags';
import { COMMON_FLAGS } from './shared_flags';
import { checkGenerate, GENERATE_ABOUT, GENERATE_FLAGS, generateCommand, MARGINS_ABOUT, MARGINS_FLAGS, marginsCommand, SINKS_ABOUT, SINKS_FLAGS, sinksCommand } from './analyse';
import { checkLayers, checkSweep, checkVector, interventionUsage, SWEEP_ABOUT, SWEEP_FLAGS, sweepCommand, VECTOR_ABOUT, VECTOR_FLAGS, vectorCommand } from './steering';
import { BATCH_ABOUT, BATCH_FLAGS, batchCommand, checkBatch, checkPatchCell } from './batch';
import { BRANCH_ABOUT, BRANCH_FLAGS, branchCommand, checkBranch, FORKS_ABOUT, FORKS_FLAGS, forksCommand } from './branch';
import { checkProbe, checkProbeSpec, PROBE_ABOUT, PROBE_FLAGS, probeCommand } from './probe';
import { checkWindowFlags, WINDOW_ABOUT, WINDOW_FLAGS, windowCommand } from './window';
import { checkPatch, PATCH_FLAGS, PATCHING_ABOUT, patchCommand } from './patching';
import { GRAD_ABOUT, GRAD_FLAGS, gradCommand } from './grad';
import { ATTRIBUTE_ABOUT, ATTRIBUTE_FLAGS, attributeCommand, checkAttribute } from './attribute';
import { checkRoute, ROUTE_ABOUT, ROUTE_FLAGS, routeCommand } from './route';
import { checkRouteSweep, ROUTE_SWEEP_ABOUT, ROUTE_SWEEP_FLAGS, routeSweepCommand } from './route_sweep';
import { checkChatTurn } from './chat_turn';
import { checkReport, REPORT_ABOUT, REPORT_FLAGS, reportCommand } from './report';
import { checkCompare, COMPARE_ABOUT, COMPARE_FLAGS, compareCommand } from './compare';
import { EXPERIMENT_USAGE } from './experiment';
import { checkSaeFlags, SAE_ABOUT, SAE_FLAGS, saeCommand } from './sae';
import { WEIGHTS_USAGE } from './weights';
import { THREADS_USAGE } from './threads';
import { checkSideEffects, SIDE_EFFECTS_ABOUT, SIDE_EFFECTS_FLAGS, sideEffectsCommand } from './side_effects';
import { checkExport, NNSIGHT_ABOUT, NNSIGHT_FLAGS, nnsightCommand, RESULTS_ABOUT, RESULTS_FLAGS, resultsCommand } from './results';
import { DLA_ABOUT, DLA_FLAGS, dlaCommand, FLOW_ABOUT, FLOW_FLAGS, flowCommand } from './attribution_fwd';
import { checkMechanisms, MECHANISMS_ABOUT, MECHANISMS_FLAGS, mechanismsCommand } from './mechanisms';
import { FIT_ABOUT, FIT_FLAGS, fitCommand } from './fit';

/** The flags every command takes. */
export type CommonValues = Values<typeof COMMON_FLAGS>;

/** What a command's checks and run get besides its values: whether a flag was given on the command line (not defaulted). */
export interface Given {
  given: (name: string) => boolean;
}

/** What a command gets: the loaded engine, its typed flag values, and the runner's shared helpers. */
export interface CommandContext<F> extends Given {
  engine: Engine;
  /** The command's flags (and the common ones), parsed and checked against its schema. */
  f: F & CommonValues;
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

/** What every command declares, whether it loads the model or only reads its files. */
interface CommandBase<S extends Schema> {
  name: string;
  /** Its own flags (COMMON_FLAGS are added to every command). */
  flags: S;
  /** What it prints, after the flag lines in --help and docs/runner.md. */
  about: string;
  /** Reads --prompt and prints the prompt's warnings before it runs. */
  prompt?: boolean;
  /** Combinations of flags, and small files named by flags, checked before the model loads. @throws Error. */
  check?: (f: Values<S> & CommonValues, g: Given) => void;
  /** Flags against the model's config (layer and head indices), before any forward pass. @throws Error. */
  checkSpec?: (f: Values<S> & CommonValues, spec: ModelSpec) => void;
}

/**
 * One command as its module declares it: `run` on a loaded engine, or `inspect` on the model's
 * files alone (config.json and headers: no fit check, no weights read, e.g. `fit`), or `runOffline`
 * with no model at all (e.g. `nnsight`).
 */
export type CommandDef<S extends Schema> = CommandBase<S> & (
  | { /** @returns the one JSON object to print, or undefined when the command wrote its own lines. */ run: (c: CommandContext<Values<S>>) => Promise<unknown>; inspect?: never; runOffline?: never }
  | { /** @returns the one JSON object to print. */ inspect: (files: ModelFiles, f: Values<S> & CommonValues) => Promise<unknown>; run?: never; runOffline?: never }
  | { /** For a command that needs no model (it takes no --model). @returns the JSON object to print. */ runOffline: (f: Values<S> & Omit<CommonValues, 'model'>) => unknown; run?: never; inspect?: never }
);

/** One runner command, with its whole schema and its usage block. */
export type Command = CommandDef<Schema> & {
  /** Its flags and the common ones: what the parser accepts. */
  schema: Schema;
  /** Its block in --help and docs/runner.md, generated from the schema. */
  usage: string;
};

/** A table row: the schema merged with the common flags, the usage generated. */
export function defineCommand<S extends Schema>(d: CommandDef<S>): Command {
  const { model, ...noModel } = COMMON_FLAGS;
  const common = d.runOffline ? noModel : { model, ...noModel };
  return { ...(d as unknown as CommandDef<Schema>), schema: { ...common, ...d.flags }, usage: usageBlock(d.name, d.flags, d.about, d.runOffline ? [] : ['model']) };
}

/** Every command, in --help order (an unknown one is refused before the model loads). */
export const COMMANDS: readonly Command[] = [
  defineCommand({ name: 'margins', flags: MARGINS_FLAGS, about: MARGINS_ABOUT, prompt: true, check: checkChatTurn, run: (c) => marginsCommand(c.engine, c.f, c.loadSae) }),
  defineCommand({ name: 'sinks', flags: SINKS_FLAGS, about: SINKS_ABOUT, prompt: true, run: (c) => sinksCommand(c.engine, c.f, c.loadSae) }),
  defineCommand({ name: 'generate', flags: GENERATE_FLAGS, about: GENERATE_ABOUT, prompt: true, check: checkGenerate, run: (c) => generateCommand(c.engine, c.f, c.loadSae) }),
  defineCommand({ name: 'sweep', flags: SWEEP_FLAGS, about: SWEEP_ABOUT, prompt: true, check: (f, g) => checkSweep(f, g.given), checkSpec: (f, s) => checkLayers(f.layers, s.nLayers), run: (c) => sweepCommand(c.engine, c.f, c.given, c.loadSae) }),
  defineCommand({ name: 'vector', flags: VECTOR_FLAGS, about: VECTOR_ABOUT, check: checkVector, checkSpec: (f, s) => { if (f.head !== undefined && f.head >= s.nHeads) throw new Error(`--head "${f.head}": this model has ${s.nHeads} heads (0..${s.nHeads - 1})`); }, run: (c) => vectorCommand(c.engine, c.f) }),
  defineCommand({ name: 'batch', flags: BATCH_FLAGS, about: BATCH_ABOUT, check: checkBatch, checkSpec: checkPatchCell, run: async (c) => { await batchCommand(c.engine, c.f, c.write); return undefined; } }),
  defineCommand({ name: 'branch', flags: BRANCH_FLAGS, about: BRANCH_ABOUT, prompt: true, check: checkBranch, run: (c) => branchCommand(c.engine, c.f) }),
  defineCommand({ name: 'forks', flags: FORKS_FLAGS, about: FORKS_ABOUT, prompt: true, run: (c) => forksCommand(c.engine, c.f) }),
  defineCommand({ name: 'probe', flags: PROBE_FLAGS, about: PROBE_ABOUT, check: checkProbe, checkSpec: checkProbeSpec, run: (c) => probeCommand(c.engine, c.f) }),
  defineCommand({ name: 'window', flags: WINDOW_FLAGS, about: WINDOW_ABOUT, check: checkWindowFlags, run: (c) => windowCommand(c.engine, c.f) }),
  defineCommand({ name: 'patch', flags: PATCH_FLAGS, about: PATCHING_ABOUT, check: checkPatch, run: (c) => patchCommand(c.engine, c.f) }),
  defineCommand({ name: 'grad', flags: GRAD_FLAGS, about: GRAD_ABOUT, prompt: true, check: checkChatTurn, run: (c) => gradCommand(c.engine, c.f) }),
  defineCommand({ name: 'attribute', flags: ATTRIBUTE_FLAGS, about: ATTRIBUTE_ABOUT, prompt: true, check: checkAttribute, run: (c) => attributeCommand(c.engine, c.f) }),
  defineCommand({ name: 'route', flags: ROUTE_FLAGS, about: ROUTE_ABOUT, prompt: true, check: checkRoute, run: (c) => routeCommand(c.engine, c.f, c.loadSae) }),
  defineCommand({ name: 'route-sweep', flags: ROUTE_SWEEP_FLAGS, about: ROUTE_SWEEP_ABOUT, prompt: true, checkSpec: checkRouteSweep, run: (c) => routeSweepCommand(c.engine, c.f, c.loadSae) }),
  defineCommand({ name: 'compare', flags: COMPARE_FLAGS, about: COMPARE_ABOUT, prompt: true, check: checkCompare, run: (c) => compareCommand(c.engine, c.f) }),
  defineCommand({ name: 'report', flags: REPORT_FLAGS, about: REPORT_ABOUT, check: checkReport, run: (c) => reportCommand(c.engine, c.f) }),
  defineCommand({ name: 'mechanisms', flags: MECHANISMS_FLAGS, about: MECHANISMS_ABOUT, check: checkMechanisms, checkSpec: (f, s) => checkLayers(f.layers, s.nLayers), run: (c) => mechanismsCommand(c.study, c.f) }),
  defineCommand({ name: 'dla', flags: DLA_FLAGS, about: DLA_ABOUT, prompt: true, check: checkChatTurn, run: (c) => dlaCommand(c.study, c.f) }),
  defineCommand({ name: 'flow', flags: FLOW_FLAGS, about: FLOW_ABOUT, prompt: true, check: checkChatTurn, run: (c) => flowCommand(c.study, c.f) }),
  defineCommand({ name: 'side-effects', flags: SIDE_EFFECTS_FLAGS, about: SIDE_EFFECTS_ABOUT, check: checkSideEffects, checkSpec: (f, s) => { if (f.layers !== undefined) checkLayers(f.layers, s.nLayers); }, run: (c) => sideEffectsCommand(c.study, c.f) }),
  defineCommand({ name: 'results', flags: RESULTS_FLAGS, about: RESULTS_ABOUT, prompt: true, check: checkExport, run: (c) => resultsCommand(c.engine, c.f) }),
  defineCommand({ name: 'nnsight', flags: NNSIGHT_FLAGS, about: NNSIGHT_ABOUT, check: checkExport, runOffline: (f) => nnsightCommand(f) }),
  defineCommand({ name: 'sae', flags: SAE_FLAGS, about: SAE_ABOUT, prompt: true, check: checkSaeFlags, run: (c) => saeCommand(c.engine, c.f, c.loadSae) }),
  defineCommand({ name: 'fit', flags: FIT_FLAGS, about: FIT_ABOUT, inspect: fitCommand }),
];

/** The command called `name`, if any. */
export function findCommand(name: string): Command | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** The first line of --help. */
export const USAGE_TITLE = 'branchpoint — logit-lens margins, attention sinks and generation from the command line';

/** Flags every command (or several) takes, after the commands in --help and docs/runner.md. */
export const FLAG_SECTIONS: readonly { name: string; usage: string }[] = [
  { name: 'Common flags', usage: ['Every command takes:', ...flagLines(COMMON_FLAGS, '  '), `${'  --help'.padEnd(30)}this text; after a command, that command's block (also -h; anywhere on the line)`].join('\n') },
  { name: 'Interventions', usage: interventionUsage(COMMANDS.filter((c) => 'intervention' in c.flags).map((c) => c.name)) },
  { name: 'Experiment files', usage: EXPERIMENT_USAGE },
  { name: 'Weight storage', usage: WEIGHTS_USAGE },
  { name: 'Threads', usage: THREADS_USAGE },
  {
    name: 'Flags, futures and models',
    usage: `Flags: --flag value or --flag=value (values may start with "-": --doses -8,-4); --help prints this.
A flag a command does not take, a misspelt one or a single-valued flag given twice is refused (exit 2),
and so is a value outside its type or range (exit 1), before any model is loaded.
Futures: alternatives separated by "|" form a token set (" Tom| Tommy"); each prints one JSON object.

--model is a folder, or a Hugging Face Hub id org/name[@revision] (revision default main):
  --endpoint URL   a Hub mirror (default $HF_ENDPOINT, else https://huggingface.co)
  $HF_TOKEN        access token for gated or private repos (sent only in the Authorization header)
A Hub model is checked against this machine's memory from its headers before it is downloaded.`,
  },
];

/**
 * `branchpoint <command> --help`: that command's block (as docs/runner.md has it) and where the rest is.
 * @param c a row of COMMANDS.
 */
export function commandHelp(c: Command): string {
  const common = Object.fromEntries(Object.entries(COMMON_FLAGS).filter(([name]) => name in c.schema));
  return [c.usage, '', '  and the common flags:', ...flagLines(common), '', 'Interventions, experiment files, weight storage, futures and every other command: branchpoint --help'].join('\n');
}

/** The whole --help text, composed from the table. */
export function usageText(): string {
  return [USAGE_TITLE, '', ...COMMANDS.flatMap((c) => [c.usage, '']), FLAG_SECTIONS.map((s) => s.usage).join('\n\n')].join('\n');
}
