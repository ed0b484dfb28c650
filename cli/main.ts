import * as fs from 'node:fs';
import * as os from 'node:os';
import { Engine } from '../workers/engine/engine';
import { studyContext } from '../workers/engine/studies/registry';
import type { DownloadProgress } from '../workers/engine/io/download';
import { assertFits } from '../workers/engine/model/estimate';
import { formatBytes } from '../workers/engine/io/bytes';
import { HubFiles, parseRepoRef } from '../workers/engine/io/hub_files';
import { NodeFiles } from '../workers/engine/io/node_files';
import type { ModelFiles } from '../workers/engine/io/model_files';
import { parseArgs, type Args } from './args';
import { COMMANDS, findCommand, usageText } from './commands';
import { applyExperimentFlags } from './experiment';
import { saeLoader } from './sae';
import { storageLine, weightsFlag } from './weights';
import { cpuBackendFromArgs } from './threads';

const USAGE = usageText();

/**
 * A folder when one exists at that path, else a Hub id (org/name[@revision]) read over HTTP with
 * --endpoint / $HF_ENDPOINT and $HF_TOKEN, refused before download when it would not fit in RAM.
 * @throws Error for neither, or the Hub's gated / not-found / too-large messages.
 */
async function openModel(a: Args): Promise<ModelFiles> {
  const model = a.flags.get('model');
  if (!model) throw new Error('--model is required: a folder (config.json, tokenizer.json, model.safetensors) or a Hub id org/name[@revision]');
  if (fs.existsSync(model)) return new NodeFiles(model);
  const ref = parseRepoRef(model);
  if (!ref) throw new Error(`--model ${model}: no such folder, and not a Hub id (org/name[@revision])`);
  const hub = new HubFiles(ref.repo, {
    revision: ref.revision,
    endpoint: a.flags.get('endpoint') ?? (process.env.HF_ENDPOINT || undefined),
    token: process.env.HF_TOKEN,
    onDownload: process.stderr.isTTY ? showDownload : undefined,
  });
  if (process.env.HF_TOKEN && hub.endpoint.startsWith('http://')) process.stderr.write(`warning: HF_TOKEN is sent unencrypted to ${hub.endpoint} (plain http); use an https mirror or unset HF_TOKEN\n`);
  await assertFits(hub, { maxBufferSize: Infinity, maxStorageBufferBindingSize: Infinity, memoryBudget: os.totalmem(), device: 'this machine (CPU backend, all of its RAM)' }, { weightDtype: weightsFlag(a) });
  return hub;
}

/** One status line on a terminal's stderr: file, bytes, rate, ETA. */
function showDownload(file: string, p: DownloadProgress): void {
  const eta = p.etaSeconds === undefined ? '' : `, ${Math.ceil(p.etaSeconds)} s left`;
  const of = p.total ? ` of ${formatBytes(p.total)}` : '';
  process.stderr.write(`\r${file}: ${formatBytes(p.loaded)}${of} at ${formatBytes(p.bytesPerSecond)}/s${eta}\x1b[K${p.loaded === p.total ? '\n' : ''}`);
}

function required(a: Args, key: string): string {
  const v = a.flags.get(key);
  if (v === undefined) throw new Error(`--${key} is required`);
  return v;
}

/** Runs one command; prints one JSON object on stdout (or a clear error on stderr). @returns exit code. */
export async function main(argv: string[]): Promise<number> {
  let a: Args;
  try {
    a = parseArgs(argv);
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (a.command === 'help' || a.flags.has('help')) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const command = findCommand(a.command);
  if (!command) {
    process.stderr.write(`error: unknown command "${a.command}" (commands: ${COMMANDS.map((c) => c.name).join(', ')}; branchpoint --help lists their flags)\n`);
    return 2;
  }
  try {
    applyExperimentFlags(a);
    const weightDtype = weightsFlag(a);
    const engine = await Engine.load(await openModel(a), await cpuBackendFromArgs(a), undefined, { weightDtype });
    if (weightDtype !== 'f32') process.stderr.write(storageLine(engine.weightStorage) + '\n');
    let prompt = '';
    if (command.prompt) {
      prompt = required(a, 'prompt');
      for (const w of engine.promptWarnings({ prompt, chatTemplate: a.flags.get('chat-template') === 'true' })) process.stderr.write(`warning: ${w}\n`);
    }
    const write = (line: string) => process.stdout.write(line + '\n');
    const loadSae = saeLoader(engine, a);
    const chatTemplate = a.flags.get('chat-template') === 'true';
    const out = await command.run({ engine, a, prompt, chatTemplate, need: (key) => required(a, key), loadSae, study: studyContext(engine, { loadSae }), write });
    if (out !== undefined) write(JSON.stringify(out));
    engine.dispose();
    return 0;
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n`);
    return 1;
  }
}
