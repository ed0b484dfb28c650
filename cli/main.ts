import * as fs from 'node:fs';
import * as os from 'node:os';
import { Engine } from '../workers/engine/engine';
import type { DownloadProgress } from '../workers/engine/io/download';
import { assertFits } from '../workers/engine/model/estimate';
import { formatBytes } from '../workers/engine/io/bytes';
import { HubFiles, parseRepoRef } from '../workers/engine/io/hub_files';
import { NodeFiles } from '../workers/engine/io/node_files';
import type { ModelFiles } from '../workers/engine/io/model_files';
import { parseArgs, type Args, numberFlag } from './args';
import { interventionsFromArgs, STEERING_USAGE, sweepCommand, vectorCommand } from './steering';
import { BATCH_USAGE, batchCommand } from './batch';
import { BRANCH_USAGE, branchCommand, forksCommand } from './branch';
import { PROBE_USAGE, probeCommand } from './probe';
import { WINDOW_USAGE, windowCommand } from './window';
import { PATCHING_USAGE, patchCommand } from './patching';
import { REPORT_USAGE, reportCommand } from './report';
import { applyExperimentFlags, EXPERIMENT_USAGE } from './experiment';
import { SAE_USAGE, saeCommand, saeLoader } from './sae';
import { storageLine, weightsFlag, WEIGHTS_USAGE } from './weights';
import { cpuBackendFromArgs, THREADS_USAGE } from './threads';

const USAGE = `branchpoint — logit-lens margins, attention sinks and generation from the command line

  branchpoint margins  --model DIR|ID --prompt TEXT --good TEXT --bad TEXT
  branchpoint sinks    --model DIR|ID --prompt TEXT [--eps 0.3]
  branchpoint generate --model DIR|ID --prompt TEXT [--good TEXT --bad TEXT] [--max-new-tokens N]
                       [--temperature T --top-k K --seed S]
  (margins and generate also take --intervention JSON, repeatable: see Interventions below)
${EXPERIMENT_USAGE}
${STEERING_USAGE}
${BATCH_USAGE}
${BRANCH_USAGE}
${PROBE_USAGE}
${WINDOW_USAGE}
${PATCHING_USAGE}
${REPORT_USAGE}
${SAE_USAGE}
${WEIGHTS_USAGE}
${THREADS_USAGE}

Flags: --flag value or --flag=value (values may start with "-": --doses -8,-4); --help prints this.
Futures: alternatives separated by "|" form a token set (" Tom| Tommy"); each prints one JSON object.

--model is a folder, or a Hugging Face Hub id org/name[@revision] (revision default main):
  --endpoint URL   a Hub mirror (default $HF_ENDPOINT, else https://huggingface.co)
  $HF_TOKEN        access token for gated or private repos (sent only in the Authorization header)
A Hub model is checked against this machine's memory from its headers before it is downloaded.`;

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

const rows = (flat: Float32Array, width: number): number[][] =>
  Array.from({ length: flat.length / width }, (_, r) => Array.from(flat.subarray(r * width, (r + 1) * width)));

/** Every command the runner knows (an unknown one is refused before the model loads). */
const COMMANDS = ['margins', 'sinks', 'generate', 'sweep', 'vector', 'batch', 'branch', 'forks', 'probe', 'window', 'patch', 'report', 'sae'];

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
  if (!COMMANDS.includes(a.command)) {
    process.stderr.write(`error: unknown command "${a.command}" (commands: ${COMMANDS.join(', ')}; branchpoint --help lists their flags)\n`);
    return 2;
  }
  try {
    applyExperimentFlags(a);
    const weightDtype = weightsFlag(a);
    const engine = await Engine.load(await openModel(a), await cpuBackendFromArgs(a), undefined, { weightDtype });
    if (weightDtype !== 'f32') process.stderr.write(storageLine(engine.weightStorage) + '\n');
    const need = (key: string) => required(a, key);
    const loadSae = saeLoader(engine, a);
    const own: Record<string, typeof vectorCommand> = { vector: vectorCommand, probe: probeCommand, window: windowCommand, patch: patchCommand, report: reportCommand };
    if (own[a.command]) {
      process.stdout.write(JSON.stringify(await own[a.command](engine, a, need)) + '\n');
      engine.dispose();
      return 0;
    }
    if (a.command === 'batch') {
      await batchCommand(engine, a, (line) => process.stdout.write(line + '\n'));
      engine.dispose();
      return 0;
    }
    const prompt = required(a, 'prompt');
    const chatTemplate = a.flags.get('chat-template') === 'true';
    for (const w of engine.promptWarnings({ prompt, chatTemplate })) process.stderr.write(`warning: ${w}\n`);
    let out: unknown;
    switch (a.command) {
      case 'margins': {
        const interventions = await interventionsFromArgs(engine, a, { nPrompt: engine.encodePrompt({ prompt, chatTemplate }).length, chatTemplate }, loadSae);
        const r = await engine.analyse({ prompt, chatTemplate, good: { text: required(a, 'good') }, bad: { text: required(a, 'bad') }, interventions });
        out = {
          ids: r.ids, tokens: r.tokens,
          good: r.good, bad: r.bad,
          lens_margin: rows(r.lensMargin, r.ids.length),
          final_margin: Array.from(r.finalMargin),
          sequence_margin: r.sequenceMargin,
          resid_norms: rows(r.residNorms, r.ids.length),
        };
        break;
      }
      case 'sinks': {
        const eps = numberFlag(a, 'eps', 0.3, { min: 0, max: 1 });
        const r = await engine.analyse({ prompt, chatTemplate, good: { ids: [[0]] }, bad: { ids: [[0]] }, sinkEps: eps });
        out = {
          ids: r.ids, tokens: r.tokens, eps,
          alpha0: rows(r.sinks.alpha0, r.nHeads),
          sink_rate: Array.from(r.sinks.sinkRate),
          sink_position: rows(Float32Array.from(r.sinks.sinkPos), r.nHeads),
          sink_value_norm: rows(r.sinks.sinkValueNorm, r.nHeads),
        };
        break;
      }
      case 'generate': {
        const good = a.flags.get('good'), bad = a.flags.get('bad');
        const maxNewTokens = numberFlag(a, 'max-new-tokens', 32, { int: true, min: 1, max: 1 << 20 });
        const interventions = await interventionsFromArgs(engine, a, { nPrompt: engine.encodePrompt({ prompt, chatTemplate }).length, maxNewTokens, chatTemplate }, loadSae);
        const g = await engine.generate({
          prompt, chatTemplate, interventions,
          good: good ? { text: good } : { ids: [[0]] }, bad: bad ? { text: bad } : { ids: [[0]] },
          maxNewTokens,
          temperature: numberFlag(a, 'temperature', 0, { min: 0, max: 1e6 }),
          topK: numberFlag(a, 'top-k', 0, { int: true, min: 0 }),
          seed: numberFlag(a, 'seed', 0, { int: true, min: 0, max: 2 ** 32 - 1 }),
        });
        out = { prompt_ids: g.promptIds, ids: g.ids, tokens: g.tokens, text: g.text, stop: g.stop, ...(good && bad ? { margins: g.margins } : {}) };
        break;
      }
      case 'sweep':
        out = await sweepCommand(engine, a, need, loadSae);
        break;
      case 'sae':
        out = await saeCommand(engine, a, need, loadSae);
        break;
      case 'branch':
        out = await branchCommand(engine, a, prompt);
        break;
      case 'forks':
        out = await forksCommand(engine, a, prompt);
        break;
      default:
        throw new Error(`unknown command "${a.command}" (commands: ${COMMANDS.join(', ')})`);
    }
    process.stdout.write(JSON.stringify(out) + '\n');
    engine.dispose();
    return 0;
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n`);
    return 1;
  }
}
