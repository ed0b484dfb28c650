import * as fs from 'node:fs';
import { Engine } from '../workers/engine/engine';
import { studyContext } from '../workers/engine/studies/registry';
import type { DownloadProgress } from '../workers/engine/io/download';
import { assertFits } from '../workers/engine/model/estimate';
import { formatBytes } from '../workers/engine/io/bytes';
import { HubFiles, parseRepoRef } from '../workers/engine/io/hub_files';
import { NodeFiles } from '../workers/engine/io/node_files';
import type { ModelFiles } from '../workers/engine/io/model_files';
import { readJson } from '../workers/engine/io/model_files';
import { architectureFor } from '../workers/engine/arch/registry';
import { isGgufFolder } from '../workers/engine/model/load';
import type { ModelSpec } from '../workers/engine/arch/spec';
import { nearest, strictFlags, tokenize, UsageError, validateFlags, type RawFlags, type Schema } from './flags';
import { COMMANDS, commandHelp, findCommand, usageText, type Command, type CommonValues } from './commands';
import { applyExperimentFlags } from './experiment';
import { saeLoader } from './sae';
import { interventionSpecs } from './steering';
import { storageLine } from './weights';
import { cpuBackendFromArgs } from './threads';
import { cpuLimits } from './fit';

const USAGE = usageText();

/**
 * A folder when one exists at that path, else a Hub id (org/name[@revision]) read over HTTP with
 * --endpoint / $HF_ENDPOINT and $HF_TOKEN, refused before download when it would not fit in RAM
 * (unless `checkFit` is false: a command that only reads config and headers).
 * @throws Error for neither, or the Hub's gated / not-found / too-large messages.
 */
async function openModel(f: CommonValues, checkFit = true): Promise<ModelFiles> {
  const model = f.model;
  if (fs.existsSync(model)) return new NodeFiles(model);
  const ref = parseRepoRef(model);
  if (!ref) throw new Error(`--model ${model}: no such folder, and not a Hub id (org/name[@revision])`);
  const hub = new HubFiles(ref.repo, {
    revision: ref.revision,
    endpoint: f.endpoint ?? (process.env.HF_ENDPOINT || undefined),
    token: process.env.HF_TOKEN,
    onDownload: process.stderr.isTTY ? showDownload : undefined,
  });
  if (process.env.HF_TOKEN && hub.endpoint.startsWith('http://')) process.stderr.write(`warning: HF_TOKEN is sent unencrypted to ${hub.endpoint} (plain http); use an https mirror or unset HF_TOKEN\n`);
  if (checkFit) await assertFits(hub, cpuLimits(), { weightDtype: f.weights });
  return hub;
}

/** One status line on a terminal's stderr: file, bytes, rate, ETA. */
function showDownload(file: string, p: DownloadProgress): void {
  const eta = p.etaSeconds === undefined ? '' : `, ${Math.ceil(p.etaSeconds)} s left`;
  const of = p.total ? ` of ${formatBytes(p.total)}` : '';
  process.stderr.write(`\r${file}: ${formatBytes(p.loaded)}${of} at ${formatBytes(p.bytesPerSecond)}/s${eta}\x1b[K${p.loaded === p.total ? '\n' : ''}`);
}

/**
 * The model's spec from its config.json alone (no weights read), for the flag checks against it; null
 * for a GGUF folder (its config is in the weights file: checked after the load, still before any forward).
 */
async function peekSpec(files: ModelFiles): Promise<ModelSpec | null> {
  if (await isGgufFolder(files)) return null;
  if (!(await files.has('config.json'))) return null; // the load says what is missing
  const config = await readJson(files, 'config.json');
  return architectureFor(config.model_type).spec(config);
}

/** A command's values from the command line: strict flags, the experiment file's, each checked. @throws UsageError | FlagError. */
export function commandFlags(command: Command, raw: RawFlags): Record<string, unknown> & CommonValues {
  applyExperimentFlags(raw, (name) => name in command.schema);
  const f = validateFlags(command.schema, raw) as Record<string, unknown> & CommonValues;
  if ('intervention' in command.schema) interventionSpecs(f.intervention as string[]);
  command.check?.(f as never, { given: (name) => raw.has(name) });
  return f;
}

/** Every command's schema by name (to say which commands take a flag another does not). */
const SCHEMAS: ReadonlyMap<string, Schema> = new Map(COMMANDS.map((c) => [c.name, c.schema]));

/**
 * The command line parsed and checked against the command's schema, and the command's own
 * checks, before any model work: what main() does before it opens the model.
 * @returns the command and its values, or the exit code and message of a refusal.
 */
export function parseCommandLine(argv: readonly string[]): { help: string } | { command: Command; f: Record<string, unknown> & CommonValues; given: (name: string) => boolean } | { code: 1 | 2; message: string; usage?: string } {
  let tokens;
  try {
    tokens = tokenize(argv);
  } catch (e) {
    return { code: 2, message: (e as Error).message, usage: USAGE };
  }
  const command = findCommand(tokens.command);
  if (tokens.command === 'help' || tokens.help) return { help: command ? commandHelp(command) : USAGE };
  if (!command) {
    const near = nearest(tokens.command, COMMANDS.map((c) => c.name));
    return { code: 2, message: `unknown command "${tokens.command}"${near ? `; did you mean ${near}?` : ''} (commands: ${COMMANDS.map((c) => c.name).join(', ')}; branchpoint --help lists their flags)` };
  }
  try {
    const raw = strictFlags(command.name, command.schema, tokens, SCHEMAS);
    return { command, f: commandFlags(command, raw), given: (name) => raw.has(name) };
  } catch (e) {
    if (e instanceof UsageError) return { code: 2, message: e.message, usage: command.usage };
    return { code: 1, message: (e as Error).message };
  }
}

/** Runs one command; prints one JSON object on stdout (or a clear error on stderr). @returns exit code. */
export async function main(argv: string[]): Promise<number> {
  const p = parseCommandLine(argv);
  if ('help' in p) {
    process.stdout.write(p.help + '\n');
    return 0;
  }
  if ('code' in p) {
    process.stderr.write(`error: ${p.message}\n${p.usage ? `\n${p.usage}\n` : ''}`);
    return p.code;
  }
  const { command, f, given } = p;
  try {
    if (command.runOffline) {
      process.stdout.write(JSON.stringify(command.runOffline(f as never)) + '\n');
      return 0;
    }
    if (command.inspect) {
      process.stdout.write(JSON.stringify(await command.inspect(await openModel(f, false), f as never)) + '\n');
      return 0;
    }
    const files = await openModel(f);
    const spec = command.checkSpec ? await peekSpec(files) : null;
    if (spec) command.checkSpec!(f as never, spec);
    const weightDtype = f.weights;
    const engine = await Engine.load(files, await cpuBackendFromArgs(f.threads), undefined, { weightDtype });
    if (!spec) command.checkSpec?.(f as never, engine.spec);
    if (f['chat-template'] === true && !engine.info().hasChatTemplate) throw new Error(`--chat-template true: ${engine.label} has no chat template (its tokenizer_config.json has no chat_template); leave the flag out for plain-text prompts, or use a chat model`);
    if (f['enable-thinking'] !== undefined && !engine.info().templateReadsThinking) throw new Error(`--enable-thinking: ${engine.label}'s chat template does not read enable_thinking (Qwen3's does), so it would change nothing; leave the flag out`);
    if (weightDtype !== 'f32') process.stderr.write(storageLine(engine.weightStorage) + '\n');
    const notes = new Set<string>();
    engine.onDecisionPoint((note) => { if (!notes.has(note)) process.stderr.write(`note: ${note}\n`); notes.add(note); });
    let prompt = '';
    if (command.prompt && f.prompt !== undefined) {
      prompt = f.prompt as string;
      for (const w of engine.promptWarnings({ prompt, chatTemplate: f['chat-template'] as boolean })) process.stderr.write(`warning: ${w}\n`);
    }
    const write = (line: string) => process.stdout.write(line + '\n');
    const loadSae = saeLoader(engine, { endpoint: f.endpoint, hook: command.name === 'sae' ? (f.hook as string | undefined) : undefined });
    const chatTemplate = (f['chat-template'] as boolean | undefined) ?? false;
    const out = await command.run!({ engine, f: f as never, prompt, chatTemplate, given, loadSae, study: studyContext(engine, { loadSae }), write });
    if (out !== undefined) write(JSON.stringify(out));
    engine.dispose();
    return 0;
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n`);
    return 1;
  }
}

/**
 * A closed stdout or stderr (`branchpoint batch … | head -1`) ends the process quietly with exit 0,
 * instead of an unhandled EPIPE error with its stack trace. Installed once, by bin/branchpoint.mjs.
 */
export function endQuietlyOnClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED') process.exit(0);
      throw e;
    });
  }
}
