import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { COMMANDS, FLAG_SECTIONS } from '../../cli/commands';
import { parseCommandLine } from '../../cli/main';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';

const MODEL = sharedPath('models', 'stories260K');
const BIN = fileURLToPath(new URL('../../bin/branchpoint.mjs', import.meta.url));
const PROMPT = 'Once upon a time, there was a little girl named Lily.';

describe('runner arguments (issue #28)', () => {
  it('sinks --intervention prints the steered sink statistics: those of Engine.analyse with the intervention', async () => {
    const spec = { hook: 'blocks.1.hook_resid_post', type: 'add', vector: Array.from({ length: 64 }, (_, i) => Math.cos(i)), alpha: 8 };
    const r = await runCli(['sinks', '--model', MODEL, '--prompt', PROMPT, '--intervention', JSON.stringify(spec)]);
    expect(r.code, r.err).toBe(0);
    const out = JSON.parse(r.out);
    const e = await Engine.load(new NodeFiles(MODEL), new CpuBackend());
    try {
      const n = e.encodePrompt({ prompt: PROMPT }).length;
      const req = { prompt: PROMPT, good: { ids: [[0]] }, bad: { ids: [[0]] }, sinkEps: 0.3 };
      const steered = await e.analyse({ ...req, interventions: [toIntervention(parseSpec(spec, 'iv'), e.spec, { nPrompt: n }, 'iv')] });
      const plain = await e.analyse(req);
      const flat = (out.alpha0 as number[][]).flat();
      flat.forEach((v, i) => expect(v).toBeCloseTo(steered.sinks.alpha0[i], 5));
      expect(out.sink_rate).toEqual(Array.from(steered.sinks.sinkRate));
      // the steering moves the statistics (the run is not the unsteered one)
      expect(Math.max(...flat.map((v, i) => Math.abs(v - plain.sinks.alpha0[i])))).toBeGreaterThan(1e-3);
    } finally {
      e.dispose();
    }
  }, 60_000);

  it('a closed stdout (batch … | head -1) ends the command quietly with exit 0, no EPIPE stack trace', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-epipe-'));
    const rows = Array.from({ length: 40 }, (_, i) => `Lily gave ball ${i} to, Tom, Lily`).join('\n');
    fs.writeFileSync(path.join(dir, 'v.csv'), `prompt,good,bad\n${rows}\n`);
    const script = `set -o pipefail; "${process.execPath}" "${BIN}" batch --model "${MODEL}" --values "${dir}/v.csv" --threads 1 2>"${dir}/err" | head -1; echo "rc=$?"`;
    const { stdout } = await promisify(execFile)('bash', ['-c', script]);
    const err = fs.readFileSync(path.join(dir, 'err'), 'utf8');
    fs.rmSync(dir, { recursive: true, force: true });
    expect(stdout).toMatch(/^\{"index":0/);
    expect(stdout.trim().endsWith('rc=0'), stdout + err).toBe(true);
    expect(err).not.toMatch(/EPIPE|\n\s+at /);
  }, 60_000);

  it('every documented flag is accepted by its command and every accepted flag is documented', () => {
    const common = FLAG_SECTIONS.find((s) => s.name === 'Common flags')!.usage;
    const documented = (text: string) => new Set([...text.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1]));
    const inCommon = documented(common);
    for (const c of COMMANDS) {
      const doc = documented(c.usage);
      for (const name of doc) {
        expect(name in c.schema || name === 'help', `${c.name}'s usage names --${name}, which it does not take`).toBe(true);
        if (name === 'help') continue;
        const r = parseCommandLine([c.name, `--${name}`, c.schema[name].example]);
        expect('code' in r && r.code === 2 ? r.message : 'accepted', `${c.name} --${name}`).toBe('accepted');
      }
      for (const name of Object.keys(c.schema)) expect(doc.has(name) || inCommon.has(name), `${c.name} takes --${name} but its usage does not document it`).toBe(true);
      // each flag has its own doc line in the command's block or the common section
      for (const name of Object.keys(c.schema)) expect(new RegExp(`^\\s+--${name} `, 'm').test(c.usage) || new RegExp(`^\\s+--${name} `, 'm').test(common), `${c.name} --${name}`).toBe(true);
    }
  });

  it('<command> --help prints that command\'s block, its flags and the common ones, no other command\'s section, and a pointer to branchpoint --help', async () => {
    const synopsis = (name: string) => new RegExp(`^  branchpoint ${name} `, 'm');
    for (const c of COMMANDS) {
      const r = parseCommandLine([c.name, '--help']);
      expect('help' in r, c.name).toBe(true);
      const text = (r as { help: string }).help;
      expect(text, c.name).toMatch(synopsis(c.name));
      for (const name of Object.keys(c.schema)) expect(text, `${c.name} --help lists --${name}`).toMatch(new RegExp(`^\\s+--${name} `, 'm'));
      for (const other of COMMANDS) if (other !== c) expect(text, `${c.name} --help shows ${other.name}'s section`).not.toMatch(synopsis(other.name));
      expect(text).not.toContain(FLAG_SECTIONS.find((s) => s.name === 'Interventions')!.usage.split('\n')[0]);
      expect(text.trimEnd().endsWith('branchpoint --help'), c.name).toBe(true);
    }
    // through the binary, flags before the command's --help: the same text; --help alone: the whole usage
    const own = await runCli(['attribute', '--model', MODEL, '--help']);
    expect(own.code).toBe(0);
    expect(own.out).toBe(`${(parseCommandLine(['attribute', '--help']) as { help: string }).help}\n`);
    const all = await runCli(['--help']);
    for (const c of COMMANDS) expect(all.out).toMatch(synopsis(c.name));
  }, 60_000);
});

describe('--experiment says when its interventions steer the numbers', () => {
  const exp = (interventions: unknown[]) => JSON.stringify({
    format: 'branchpoint-experiment', version: 3, model: { kind: 'bundled', name: 'stories260K' }, prompt: 'Once upon a time', chatTemplate: false,
    good: { mode: 'text', value: ' there' }, bad: { mode: 'text', value: ' a' },
    vectors: [{ name: 'v', hook: 'blocks.3.hook_resid_post', model: 'stories260K', dModel: 64, provenance: { method: 'file', position: 'last', positive: [], negative: [] }, values: Array.from({ length: 64 }, (_, i) => Math.sin(i)) }],
    interventions,
  });
  it('an enabled intervention: a stderr note names it and says the results are steered; none: no note, and the margin differs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-exp-note-'));
    try {
      const iv = { enabled: true, hook: 'blocks.3.hook_resid_post', type: 'add', dose: 4, vector: 0, positions: 'all' };
      fs.writeFileSync(path.join(dir, 'steered.json'), exp([iv]));
      fs.writeFileSync(path.join(dir, 'plain.json'), exp([{ ...iv, enabled: false }]));
      const steered = await runCli(['margins', '--experiment', path.join(dir, 'steered.json')]);
      const plain = await runCli(['margins', '--experiment', path.join(dir, 'plain.json')]);
      expect(steered.code, steered.err).toBe(0);
      expect(plain.code, plain.err).toBe(0);
      expect(steered.err).toContain('its 1 enabled intervention applies (#1 add at blocks.3.hook_resid_post); the results are steered');
      expect(plain.err).not.toContain('the results are steered');
      const last = (r: { out: string }) => (JSON.parse(r.out) as { final_margin: number[] }).final_margin.at(-1)!;
      expect(last(steered)).not.toBe(last(plain));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
