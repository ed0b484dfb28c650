/**
 * Runs one corpus case in process (Node, CPU backend) and returns what it produced: the result,
 * or the error message. Shared by corpus.test.ts and the fuzzer's regression cases.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { HubFiles, parseRepoRef } from '../../workers/engine/io/hub_files';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { parseSafetensors } from '../../workers/engine/io/safetensors';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { assertVectorFits, readVectorFile } from '../../workers/engine/steering/vector_io';
import { doseResponse } from '../../workers/engine/studies/sweep';
import { readSae } from '../../workers/engine/sae/files';
import { Sae } from '../../workers/engine/sae/sae';
import { main } from '../../cli/main';
import * as http from 'node:http';
import { execFileSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { goldenDataHandler } from '../../tools/golden_data';
import { readExperiment } from '../../workers/engine/experiment';
import { formatOfName, parseValues } from '../../workers/engine/studies/batch/values';
import { parseLabelledSet } from '../../workers/engine/io/prompt_set';
import { probeLayers } from '../../workers/engine/studies/probe';
import { sharedPath } from '../shared';
import { CORPUS_PROMPT, type BadInputCase, type CaseInput } from './inputs';

export type Outcome = { ok: true; result: unknown } | { ok: false; message: string };

let base: Promise<Engine> | null = null;
/** stories260K on the CPU backend, loaded once for the prompt, future, intervention and sweep cases. */
export function baseEngine(): Promise<Engine> {
  base ??= Engine.load(new MemoryFiles('stories260K', new Map(fs.readdirSync(sharedPath('models', 'stories260K')).filter((f) => f.endsWith('.json') || f.endsWith('.safetensors')).map((f) => [f, new Uint8Array(fs.readFileSync(sharedPath('models', 'stories260K', f)))]))), new CpuBackend());
  return base;
}

function specs(e: Engine, list: unknown[] | undefined, nPrompt: number, maxNewTokens?: number) {
  return (list ?? []).map((j, i) => toIntervention(parseSpec(j, `intervention ${i + 1}`), e.spec, { nPrompt, maxNewTokens }, `intervention ${i + 1}`));
}

/** The command-line runner in process: stdout/stderr captured, the exit code checked. */
async function runCli(argv: string[], folder?: Map<string, Uint8Array>, experiment?: string): Promise<unknown> {
  let dir: string | null = null;
  if (folder || experiment !== undefined) dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-corpus-'));
  if (folder) {
    fs.mkdirSync(path.join(dir!, 'model'));
    for (const [f, b] of folder) fs.writeFileSync(path.join(dir!, 'model', f), b);
  }
  if (experiment !== undefined) fs.writeFileSync(path.join(dir!, 'experiment.json'), experiment);
  const swap: Record<string, () => string> = {
    MODEL: () => sharedPath('models', 'stories260K'),
    MODELFILE: () => sharedPath('models', 'stories260K', 'model.safetensors'),
    FOLDER: () => path.join(dir!, 'model'),
    EXPERIMENT: () => path.join(dir!, 'experiment.json'),
    NOMODEL: () => path.join(os.tmpdir(), 'bp-no-such-model'),
  };
  const args = argv.map((a) => swap[a]?.() ?? (a.startsWith('FOLDER/') ? path.join(dir!, 'model', a.slice('FOLDER/'.length)) : a));
  let out = '', err = '';
  const ow = process.stdout.write.bind(process.stdout), ew = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((s: string) => { out += s; return true; }) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => { err += s; return true; }) as typeof process.stderr.write;
  let code: number;
  try {
    code = await main(args);
  } finally {
    process.stdout.write = ow;
    process.stderr.write = ew;
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
  if (code !== 0) throw new Error(err.replace(/^error: /, '').trim());
  return JSON.parse(out);
}

/**
 * A GET through the golden-data middleware on a real HTTP server, over a temp shared root with
 * models/ok.txt and a sibling folder models-private/secret.txt (and an empty public/).
 */
async function getGolden(url: string): Promise<string> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-shared-'));
  for (const [f, t] of [['shared/models/ok.txt', 'ok'], ['shared/models-private/secret.txt', 'SECRET'], ['public/.keep', '']]) {
    fs.mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    fs.writeFileSync(path.join(root, f), t);
  }
  const handler = goldenDataHandler(path.join(root, 'shared'), path.join(root, 'public'));
  const server = http.createServer((req, res) => handler(req, res, () => { res.statusCode = 404; res.end('not golden data'); }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${url}`);
    const body = await res.text();
    if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${body}`);
    return body;
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** Runs the input; never throws (a thrown error becomes { ok: false, message }). */
export async function runInput(input: CaseInput): Promise<Outcome> {
  try {
    return { ok: true, result: await run(input) };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}

async function run(input: CaseInput): Promise<unknown> {
  switch (input.kind) {
    case 'model': {
      const e = await Engine.load(new MemoryFiles('variant', input.files), new CpuBackend(), undefined, input.options ?? {});
      try {
        return await e.analyse(CORPUS_PROMPT);
      } finally {
        e.dispose();
      }
    }
    case 'safetensors':
      return parseSafetensors(input.bytes, 'case.safetensors');
    case 'analyse': {
      const e = await baseEngine();
      const req = { prompt: input.prompt, chatTemplate: input.chatTemplate };
      const n = input.prompt.length ? e.encodePrompt(req).length : 1;
      return await e.analyse({ ...req, good: { text: input.good }, bad: { text: input.bad }, interventions: specs(e, input.interventions, n) });
    }
    case 'generate': {
      const e = await baseEngine();
      const n = e.encodePrompt({ prompt: input.prompt }).length;
      const maxNewTokens = input.maxNewTokens ?? 8;
      return await e.generate({ prompt: input.prompt, good: { text: ' a' }, bad: { text: ' b' }, maxNewTokens, temperature: input.temperature, topK: input.topK, interventions: specs(e, input.interventions, n, maxNewTokens) });
    }
    case 'vector': {
      const e = await baseEngine();
      const v = readVectorFile(input.name, input.bytes);
      assertVectorFits(v.vector, e.spec, 'blocks.2.hook_resid_post', input.name);
      return v.vector;
    }
    case 'sweep': {
      const e = await baseEngine();
      const type = (input.type ?? 'add') as 'add';
      return await doseResponse(e, { ...CORPUS_PROMPT, template: { hook: 'blocks.{l}.hook_resid_post', type, vector: input.vector ?? Array.from({ length: 64 }, (_, i) => Math.sin(i)) }, layers: input.layers, doses: input.doses });
    }
    case 'hub': {
      const ref = parseRepoRef(input.ref);
      if (!ref) throw new Error(`"${input.ref}" is not a Hub repo id`);
      return new HubFiles(ref.repo, { revision: ref.revision, endpoint: input.endpoint }).url('config.json');
    }
    case 'sae': {
      const e = await baseEngine();
      const sae = new Sae(e.backend, await readSae(new MemoryFiles('sae', input.files), input.path ?? '', { hook: input.hook, maxBytes: input.maxBytes }), e.spec);
      sae.release();
      return sae.cfg;
    }
    case 'cli':
      return runCli(input.argv, input.folder, input.experiment);
    case 'http':
      return getGolden(input.url);
    case 'experiment':
      return readExperiment(input.text);
    case 'values':
      return parseValues(input.text, formatOfName(input.name) ?? undefined);
    case 'labelled':
      return parseLabelledSet(input.name, input.text);
    case 'probe':
      return probeLayers(await baseEngine(), { positive: input.positive, negative: input.negative, position: input.position });
    case 'ci': {
      const etc = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-apt-'));
      try {
        for (const [f, t] of Object.entries(input.files)) {
          fs.mkdirSync(path.dirname(path.join(etc, f)), { recursive: true });
          fs.writeFileSync(path.join(etc, f), t);
        }
        const out = execFileSync('bash', [path.join(import.meta.dirname, '..', '..', '.ci', 'run'), '--distro-uri', input.suite], { env: { ...process.env, APT_ETC: etc }, encoding: 'utf8' }).trim();
        if (!out) throw new Error(`no apt source for the suite ${input.suite}`);
        return out;
      } finally {
        fs.rmSync(etc, { recursive: true, force: true });
      }
    }
  }
}

/** Whether an outcome is what the case expects; the reason when not. */
export function judge(c: BadInputCase, o: Outcome): true | string {
  if ('error' in c.expect) {
    if (o.ok) return `expected an error matching ${c.expect.error}, got a result`;
    return c.expect.error.test(o.message) ? true : `error "${o.message}" does not match ${c.expect.error}`;
  }
  if (!o.ok) return `expected ${c.expect.ok}, got the error "${o.message}"`;
  return c.expect.check(o.result) ? true : `result is not: ${c.expect.ok}`;
}
