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
async function runCli(argv: string[], folder?: Map<string, Uint8Array>): Promise<unknown> {
  let dir: string | null = null;
  if (folder) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-corpus-'));
    fs.mkdirSync(path.join(dir, 'model'));
    for (const [f, b] of folder) fs.writeFileSync(path.join(dir, 'model', f), b);
  }
  const args = argv.map((a) => (a === 'MODEL' ? sharedPath('models', 'stories260K') : a === 'NOMODEL' ? path.join(os.tmpdir(), 'bp-no-such-model') : a === 'FOLDER' ? path.join(dir!, 'model') : a.startsWith('FOLDER/') ? path.join(dir!, 'model', a.slice('FOLDER/'.length)) : a));
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
      return runCli(input.argv, input.folder);
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
