import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { COMMANDS } from '../../cli/commands';
import { parseCommandLine } from '../../cli/main';
import { COMMON_FLAGS } from '../../cli/shared_flags';
import { runCli } from '../cli_run';

/**
 * Seeded fuzzing of the runner's arguments (issue #28): for every command, random command lines of
 * known flags (valid values, values at and past their bounds, non-numbers, empty list items),
 * unknown and misspelt flags, flags of other commands and repeated flags, through the parse and
 * validate layer (cli/main.ts parseCommandLine: everything main() does before it opens a model).
 * Properties: it never throws and no message holds a stack trace; an unknown, not-taken or repeated
 * flag is always refused with exit 2; a value its flag refuses is never accepted; each answer takes
 * under 1 s of CPU time. A few of the refused lines then go end to end through bin/branchpoint.mjs
 * (a model folder that does not exist: the answer must be the flag's, before any model work).
 * Reproducible: seed BP_FUZZ_SEED (default 20261130); budget: NUM_RUNS per command or 40 s in all.
 */
const SEED = Number(process.env.BP_FUZZ_SEED ?? 20261130);
const NUM_RUNS = 300;
const DEADLINE = Date.now() + 40_000;
const NUMERIC_NONSENSE = ['abc', '', '1e400', 'NaN', 'Infinity', '-Infinity', '0x10', '1e999', ' '];
const ALL_FLAGS = [...new Set(COMMANDS.flatMap((c) => Object.keys(c.schema)))];
const STACK = /\n\s+at .*:\d+/;

type Occurrence = { name: string; text: string; kind: 'valid' | 'edge' | 'random' | 'unknown' | 'foreign' };

describe('runner argument fuzzing', () => {
  const failures: string[] = [];
  for (const c of COMMANDS) {
    it(`${c.name}: unknown, foreign and repeated flags refused (exit 2), bad values refused, never a stack trace`, () => {
      const names = Object.keys(c.schema);
      const foreign = ALL_FLAGS.filter((n) => !(n in c.schema));
      const occurrence: fc.Arbitrary<Occurrence> = fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom(...names).map((name) => ({ name, text: c.schema[name].example, kind: 'valid' as const })) },
        { weight: 3, arbitrary: fc.constantFrom(...names).chain((name) => fc.constantFrom(...(c.schema[name].edges.length ? c.schema[name].edges : [''])).map((text) => ({ name, text, kind: 'edge' as const }))) },
        { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...names), fc.string({ maxLength: 8 })).map(([name, text]) => ({ name, text, kind: 'random' as const })) },
        { weight: 1, arbitrary: fc.constantFrom(...names).map((n) => ({ name: n.slice(0, -1) + (n.endsWith('x') ? 'y' : 'x'), text: '1', kind: 'unknown' as const })) },
        { weight: 1, arbitrary: fc.stringMatching(/^[a-z][a-z-]{0,10}$/).map((name) => ({ name, text: '1', kind: 'unknown' as const })) },
        ...(foreign.length ? [{ weight: 1, arbitrary: fc.constantFrom(...foreign).map((name) => ({ name, text: '1', kind: 'foreign' as const })) }] : []),
      );
      const line = fc.record({ occ: fc.array(occurrence, { maxLength: 6 }), dup: fc.boolean(), required: fc.boolean() });
      let runs = 0;
      fc.assert(fc.property(line, ({ occ, dup, required }) => {
        if (Date.now() > DEADLINE) return true;
        runs++;
        const flags = [...occ];
        if (required) for (const n of names) if (c.schema[n].presence === 'required' && !flags.some((o) => o.name === n)) flags.unshift({ name: n, text: c.schema[n].example, kind: 'valid' });
        if (dup && flags.length) flags.push({ ...flags[0] });
        const argv = [c.name, ...flags.flatMap((o, i) => (i % 2 === 0 ? [`--${o.name}=${o.text}`] : [`--${o.name}`, o.text]))];
        const t0 = process.cpuUsage();
        const r = parseCommandLine(argv);
        const cpu = process.cpuUsage(t0);
        expect((cpu.user + cpu.system) / 1000, argv.join(' ')).toBeLessThan(1000);
        expect('help' in r, argv.join(' ')).toBe(false);
        const unknown = flags.some((o) => !(o.name in c.schema));
        const counts = new Map<string, number>();
        for (const o of flags) counts.set(o.name, (counts.get(o.name) ?? 0) + 1);
        const repeated = [...counts].some(([n, k]) => k > 1 && n in c.schema && c.schema[n].presence !== 'repeated');
        const badValue = flags.some((o) => o.name in c.schema && !c.schema[o.name].schema.safeParse(o.text).success);
        const numericNonsense = flags.some((o) => o.name in c.schema && /^a (whole )?number/.test(c.schema[o.name].expects) && NUMERIC_NONSENSE.includes(o.text));
        if ('code' in r) {
          expect(r.message, argv.join(' ')).not.toMatch(STACK);
          expect(r.message.length).toBeGreaterThan(0);
        }
        if (unknown || repeated) {
          expect('code' in r && r.code, `${argv.join(' ')} → ${'code' in r ? r.message : 'accepted'}`).toBe(2);
          if ('code' in r) expect(r.message).toMatch(/^--[^:]+: (unknown flag for|\S+ does not take this flag)|^--\S+ given twice/);
        } else if (badValue || numericNonsense) {
          expect('code' in r && r.code, `${argv.join(' ')} → ${'code' in r ? r.message : 'accepted'}`).toBe(1);
        }
        if (!('code' in r)) for (const o of flags) expect(c.schema[o.name].schema.safeParse(o.text).success).toBe(true);
        if ('code' in r && r.code === 1 && failures.length < 12 && (badValue || numericNonsense)) failures.push(JSON.stringify(argv));
        return true;
      }), { seed: SEED + c.name.length, numRuns: NUM_RUNS });
      expect(runs).toBeGreaterThan(20);
    });
  }

  it('a few refused lines end to end: exit ≠ 0, the flag named, no stack trace, an answer within seconds (no model work: the model folder does not exist)', async () => {
    const lines = [
      ['margins', '--model', '/no/such/model', '--promt', 'x', '--good', ' a', '--bad', ' b'],
      ['sweep', '--model', '/no/such/model', '--prompt', 'x', '--good', ' a', '--bad', ' b', '--vector', 'v.npy', '--layers', '1,,2', '--doses', '1'],
      ['probe', '--model', '/no/such/model', '--set', 's.json', '--l2', '1e400'],
      ['generate', '--model', '/no/such/model', '--prompt', 'x', '--seed', '1', '--seed', '2'],
    ];
    for (const argv of lines) {
      const t0 = Date.now();
      const r = await runCli(argv);
      expect(Date.now() - t0, argv.join(' ')).toBeLessThan(20_000);
      expect(r.code, argv.join(' ')).not.toBe(0);
      expect(r.err).toMatch(/^error: --(promt|layers|l2|seed)/);
      expect(r.err).not.toMatch(STACK);
      expect(r.err).not.toMatch(/no such folder/);
    }
  }, 90_000);

  it('knows the common flags on every command (all but --model on a command that needs no model)', () => {
    for (const c of COMMANDS) for (const n of Object.keys(COMMON_FLAGS)) expect(n in c.schema, `${c.name} --${n}`).toBe(!(n === 'model' && c.runOffline));
  });
});
