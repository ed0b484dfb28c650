import * as fs from 'node:fs';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import type { ModelFiles } from '../workers/engine/io/model_files';
import { parseArgs, type Args } from './args';

const USAGE = `branchpoint — logit-lens margins, attention sinks and generation from the command line

  branchpoint margins  --model DIR --prompt TEXT --good TEXT --bad TEXT
  branchpoint sinks    --model DIR --prompt TEXT [--eps 0.3]
  branchpoint generate --model DIR --prompt TEXT [--good TEXT --bad TEXT] [--max-new-tokens N]
                       [--temperature T --top-k K --seed S]

Futures: alternatives separated by "|" form a token set (" Tom| Tommy"); each prints one JSON object.`;

async function openModel(a: Args): Promise<ModelFiles> {
  const model = a.flags.get('model');
  if (!model) throw new Error('--model DIR is required (a folder with config.json, tokenizer.json, model.safetensors)');
  if (fs.existsSync(model)) return new NodeFiles(model);
  throw new Error(`--model ${model}: no such folder`);
}

function required(a: Args, key: string): string {
  const v = a.flags.get(key);
  if (v === undefined) throw new Error(`--${key} is required`);
  return v;
}

const rows = (flat: Float32Array, width: number): number[][] =>
  Array.from({ length: flat.length / width }, (_, r) => Array.from(flat.subarray(r * width, (r + 1) * width)));

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
  try {
    const engine = await Engine.load(await openModel(a), new CpuBackend());
    const prompt = required(a, 'prompt');
    const chatTemplate = a.flags.get('chat-template') === 'true';
    let out: unknown;
    switch (a.command) {
      case 'margins': {
        const r = await engine.analyse({ prompt, chatTemplate, good: { text: required(a, 'good') }, bad: { text: required(a, 'bad') } });
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
        const eps = Number(a.flags.get('eps') ?? 0.3);
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
        const g = await engine.generate({
          prompt, chatTemplate,
          good: good ? { text: good } : { ids: [[0]] }, bad: bad ? { text: bad } : { ids: [[0]] },
          maxNewTokens: Number(a.flags.get('max-new-tokens') ?? 32),
          temperature: Number(a.flags.get('temperature') ?? 0),
          topK: Number(a.flags.get('top-k') ?? 0),
          seed: Number(a.flags.get('seed') ?? 0),
        });
        out = { prompt_ids: g.promptIds, ids: g.ids, tokens: g.tokens, text: g.text, stop: g.stop, ...(good && bad ? { margins: g.margins } : {}) };
        break;
      }
      default:
        throw new Error(`unknown command "${a.command}" (margins, sinks, generate)`);
    }
    process.stdout.write(JSON.stringify(out) + '\n');
    engine.dispose();
    return 0;
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n`);
    return 1;
  }
}
