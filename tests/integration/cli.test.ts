import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';

const MODEL = sharedPath('models', 'stories260K');
const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8'));
const lily = ref.prompts[1];

const cli = (...args: string[]) => runCli(args);

/** A copy of stories260K in a temp folder, with one file changed. */
function brokenCopy(mutate: (dir: string) => void): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-bad-'));
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors']) fs.copyFileSync(path.join(MODEL, f), path.join(dir, f));
  mutate(dir);
  return dir;
}

describe('branchpoint runner', () => {
  // margins, sinks, vector and sweep output keys against the references: cli_reference.test.ts
  it('generate: 32 greedy tokens equal the reference continuation', async () => {
    const r = await cli('generate', '--model', MODEL, '--prompt', lily.prompt, '--max-new-tokens', '32');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out);
    expect(out.ids).toEqual(lily.greedy_ids);
    expect(out.text).toBe(lily.continuation_text);
  });

  it('bad input fails with a clear message and exit code 1, never a stack trace', async () => {
    const cases: [string, RegExp][] = [
      [brokenCopy((d) => fs.truncateSync(path.join(d, 'model.safetensors'), 500_000)), /model\.safetensors.*past the end of the data/],
      [brokenCopy((d) => {
        // Rewrite the header so one tensor's data_offsets point past the end of the file.
        const f = path.join(d, 'model.safetensors');
        const b = fs.readFileSync(f);
        const n = Number(b.readBigUInt64LE(0));
        const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8'));
        const e = header['model.norm.weight'];
        e.data_offsets = [e.data_offsets[0] + 4_000_000, e.data_offsets[1] + 4_000_000];
        const json = Buffer.from(JSON.stringify(header));
        const len = Buffer.alloc(8);
        len.writeBigUInt64LE(BigInt(json.length));
        fs.writeFileSync(f, Buffer.concat([len, json, b.subarray(8 + n)]));
      }), /data_offsets .* run past the end/],
      [brokenCopy((d) => fs.writeFileSync(path.join(d, 'config.json'), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(MODEL, 'config.json'), 'utf8')), model_type: 'not_a_model' }))), /unsupported model_type "not_a_model": this engine runs .*llama/],
      [brokenCopy((d) => fs.rmSync(path.join(d, 'tokenizer.json'))), /tokenizer\.json is missing/],
    ];
    for (const [dir, message] of cases) {
      const r = await cli('margins', '--model', dir, '--prompt', 'Hi', '--good', ' a', '--bad', ' b');
      expect(r.code).toBe(1);
      expect(r.err).toMatch(message);
      expect(r.err).not.toMatch(/\n\s+at /);
    }
  });

  it('--help prints the usage and exits 0, alone; after a command, or with flags before it, that command\'s block', async () => {
    for (const args of [['--help'], ['-h'], ['margins', '--help'], ['sweep', '--model', MODEL, '--help'], ['generate', '--help', '--prompt', 'Hi']]) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).toBe(0);
      const own = args.find((a) => !a.startsWith('-') && a !== MODEL && a !== 'Hi');
      if (own) expect(r.out, args.join(' ')).toMatch(new RegExp(`^  branchpoint ${own} `));
      else expect(r.out, args.join(' ')).toMatch(/^branchpoint — logit-lens margins[^]*branchpoint sweep/);
      expect(r.err, args.join(' ')).toBe('');
    }
  });

  it('--flag=value gives the same run as --flag value, values may start with "-" (--doses -8,-4) and contain "="', async () => {
    const spaced = await cli('margins', '--model', MODEL, '--prompt', lily.prompt, '--good', ' Tom', '--bad', ' Lily');
    const joined = await cli('margins', `--model=${MODEL}`, `--prompt=${lily.prompt}`, '--good= Tom', '--bad', ' Lily');
    expect(joined.code).toBe(0);
    expect(JSON.parse(joined.out)).toEqual(JSON.parse(spaced.out));

    const template = `{"hook":"blocks.{l}.hook_resid_post","type":"add","vector":[${Array.from({ length: 64 }, (_, i) => (i % 7) / 7).join(',')}]}`;
    const sweep = (...doses: string[]) => cli('sweep', '--model', MODEL, '--prompt', lily.prompt, '--good', ' Tom', '--bad', ' Lily', '--layers=1,3', ...doses, `--intervention-template=${template}`);
    const a = await sweep('--doses=-8,-4,0,4,8');
    const b = await sweep('--doses', '-8,-4,0,4,8');
    expect(a.code, a.err).toBe(0);
    expect(JSON.parse(a.out).doses).toEqual([-8, -4, 0, 4, 8]);
    expect(JSON.parse(a.out).layers).toEqual([1, 3]);
    expect(JSON.parse(a.out)).toEqual(JSON.parse(b.out));
  });

  it('flags without a command, or a flag without its value, are refused with the usage and exit code 2', async () => {
    const r = await cli('--prompt', 'Hi');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^error: the command comes first/);
    const s = await cli('margins', '--model');
    expect(s.code).toBe(2);
    expect(s.err).toMatch(/^error: --model needs a value/);
    expect(s.err).toContain('branchpoint margins');
  });

  it('a prompt longer than max_position_embeddings is refused with the context length', async () => {
    const r = await cli('margins', '--model', MODEL, '--prompt', 'Lily went to the park. '.repeat(120), '--good', ' a', '--bad', ' b');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/longer than the model's context of 512 tokens/);
  });
});
