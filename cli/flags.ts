/**
 * The runner's flags, declared once: each command's schema (a record of flag name → Flag: value
 * type, range, default, required or repeatable, a doc line) is the one source from which
 * - strict parsing (parseCommandLine: unknown flags, flags the command does not take and repeated
 *   flags are refused, with the nearest known flag suggested),
 * - validation (validateFlags: every value checked by its zod schema, the message naming the flag,
 *   the value given and what is expected), and
 * - the usage text (usageBlock, flagLines: --help and docs/runner.md)
 * are derived. A command declares its schema in its module (cli/*.ts) and its row in cli/commands.ts.
 *
 * The tokenizer is ours rather than node:util parseArgs: in strict mode parseArgs refuses an option
 * value that starts with "-" (`--doses -8,-4`, `--position -1`), which the runner has always taken;
 * what strict mode checks (unknown options, missing values, stray positionals) is checked here too,
 * and more (repeated single-valued flags).
 */
import { z } from 'zod';

/** How a flag may be present: at most once (optional, with a default, or required) or any number of times. */
export type Presence = 'optional' | 'default' | 'required' | 'repeated';

/** A command-line mistake in the shape of the line (unknown or repeated flag, a flag without its value): exit 2 with the usage. */
export class UsageError extends Error {}
/** A flag value refused by its schema, or a combination of flags refused by the command: exit 1, before any model work. */
export class FlagError extends Error {}

/** Where an issue's message is already a whole sentence naming the flag (custom parsers keep their messages). */
const WHOLE = 'whole';

/** One flag: its value schema (text → T), presence, placeholder and doc line. Immutable; the modifiers return copies. */
export class Flag<T = unknown, P extends Presence = Presence> {
  constructor(
    /** Parses and checks the text given on the command line. */
    readonly schema: z.ZodType<T, string>,
    /** What the value must be, for the usage: "a whole number ≥ 1". */
    readonly expects: string,
    /** The placeholder after the flag in the usage: TEXT, N, X, FILE, JSON… */
    readonly metavar: string,
    /** A valid value (for the tests and the fuzzer). */
    readonly example: string,
    readonly presence: P = 'optional' as P,
    readonly doc = '',
    readonly fallback?: T,
    /** Values worth trying at and past the bounds (the fuzzer). */
    readonly edges: readonly string[] = [],
  ) {}

  private with<Q extends Presence>(o: { presence?: Q; doc?: string; fallback?: T }): Flag<T, Q> {
    return new Flag<T, Q>(this.schema, this.expects, this.metavar, this.example, (o.presence ?? this.presence) as Q, o.doc ?? this.doc, 'fallback' in o ? o.fallback : this.fallback, this.edges);
  }
  /** The same flag with this doc line. */
  describe(doc: string): Flag<T, P> { return this.with({ doc }); }
  /** Must be given. */
  required(): Flag<T, 'required'> { return this.with({ presence: 'required' }); }
  /** Takes `value` when absent. */
  default(value: T): Flag<T, 'default'> { return this.with({ presence: 'default', fallback: value }); }
  /** May be given any number of times (values in order). */
  repeatable(): Flag<T, 'repeated'> { return this.with({ presence: 'repeated' }); }
  /** Back to optional (a shared flag that one command does not require). */
  optional(): Flag<T, 'optional'> { return this.with({ presence: 'optional', fallback: undefined }); }
}

/** A command's flags by name (without the leading "--"). */
export type Schema = Record<string, Flag<any, Presence>>;

/** The typed values of a schema: optional flags may be undefined, repeatable ones are arrays. */
export type Values<S extends Schema> = {
  [K in keyof S]: S[K] extends Flag<infer T, infer P> ? (P extends 'optional' ? T | undefined : P extends 'repeated' ? T[] : T) : never;
};

// ------------------------------------------------------------------ value types

const rangeText = (min: number | undefined, max: number | undefined, gt = false): string => {
  const lo = min === undefined ? '' : `${gt ? '>' : '≥'} ${min}`;
  const hi = max === undefined ? '' : `≤ ${max}`;
  return [lo, hi].filter(Boolean).join(' and ');
};

/** A whole text that is a finite number ("", "abc", "0x10", "1e400" are not). */
const NUMBER_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const toNumber = (s: string): number => (NUMBER_TEXT.test(s.trim()) ? Number(s.trim()) : NaN);

function numeric(int: boolean, o: { min?: number; max?: number; gt?: number }): { schema: z.ZodType<number, string>; expects: string } {
  const lo = o.gt ?? o.min;
  const range = rangeText(lo, o.max, o.gt !== undefined);
  const expects = `${int ? 'a whole number' : 'a number'}${range ? ` ${range}` : ''}`;
  const schema = z.string().transform((s, ctx) => {
    const v = toNumber(s);
    const ok = Number.isFinite(v) && (!int || Number.isInteger(v)) && (o.min === undefined || v >= o.min) && (o.gt === undefined || v > o.gt) && (o.max === undefined || v <= o.max);
    if (!ok) {
      ctx.addIssue({ code: 'custom', message: `expected ${expects}${Number.isFinite(v) || s.trim() === '' || !NUMBER_TEXT.test(s.trim()) ? '' : ' (this one is not finite)'}` });
      return z.NEVER;
    }
    return v;
  });
  return { schema, expects };
}

const edgesOf = (int: boolean, o: { min?: number; max?: number; gt?: number }): string[] => {
  const out = ['abc', '', '1e400', 'NaN', 'Infinity', '-Infinity', '0x10'];
  if (int) out.push('2.5');
  for (const b of [o.min, o.gt, o.max]) if (b !== undefined) out.push(String(b), String(b - 1), String(b + 1), String(b - 0.5));
  return out;
};

/** A whole number in [min, max]. */
export function int(o: { min?: number; max?: number } = {}, metavar = 'N'): Flag<number, 'optional'> {
  const { schema, expects } = numeric(true, o);
  return new Flag(schema, expects, metavar, String(o.min ?? 0), 'optional', '', undefined, edgesOf(true, o));
}

/** A finite number in [min, max] (or > gt). */
export function num(o: { min?: number; max?: number; gt?: number } = {}, metavar = 'X'): Flag<number, 'optional'> {
  const { schema, expects } = numeric(false, o);
  return new Flag(schema, expects, metavar, String(o.min ?? (o.gt !== undefined ? o.gt + 1 : 0)), 'optional', '', undefined, edgesOf(false, o));
}

/** Any text (nonEmpty: "" refused). */
export function text(metavar = 'TEXT', o: { nonEmpty?: boolean } = {}): Flag<string, 'optional'> {
  const schema = o.nonEmpty ? z.string().refine((s) => s.length > 0, { message: 'expected a non-empty text' }) : z.string();
  return new Flag(schema as z.ZodType<string, string>, o.nonEmpty ? 'a non-empty text' : 'a text', metavar, 'x', 'optional', '', undefined, o.nonEmpty ? [''] : []);
}

/** true or false. */
export function bool(): Flag<boolean, 'optional'> {
  const schema = z.enum(['true', 'false'], { error: () => 'expected true or false' }).transform((s) => s === 'true');
  return new Flag(schema, 'true or false', 'true|false', 'true', 'optional', '', undefined, ['yes', '1', '', 'TRUE']);
}

/** One of `values`. */
export function oneOf<const V extends string>(values: readonly V[]): Flag<V, 'optional'> {
  const schema = z.string().refine((s): s is V => (values as readonly string[]).includes(s), { message: `expected one of ${values.join(', ')}` }) as unknown as z.ZodType<V, string>;
  return new Flag(schema, `one of ${values.join(', ')}`, values.join('|'), values[0], 'optional', '', undefined, ['', `${values[0]}x`, values[0].toUpperCase() === values[0] ? 'x' : values[0].toUpperCase()]);
}

/** Comma-separated items, each parsed by `item` (no empty items: "1,,2" is refused). */
function list<T>(item: (s: string) => T | undefined, expects: string, metavar: string, example: string, edges: string[]): Flag<T[], 'optional'> {
  const schema = z.string().transform((s, ctx) => {
    const parts = s.split(',').map((p) => p.trim());
    const bad = parts.findIndex((p) => p === '' || item(p) === undefined);
    if (bad >= 0) {
      ctx.addIssue({ code: 'custom', message: `expected ${expects}${parts[bad] === '' ? ` (item ${bad + 1} is empty)` : ` (item ${bad + 1} "${parts[bad]}" is not)`}` });
      return z.NEVER;
    }
    return parts.map((p) => item(p)!);
  });
  return new Flag(schema, expects, metavar, example, 'optional', '', undefined, ['', ',', '1,,2', '1,', ',1', 'a,b', ...edges]);
}

/** Whole numbers ≥ min, comma-separated. */
export function intList(o: { min?: number } = {}, metavar = 'N,N…'): Flag<number[], 'optional'> {
  const min = o.min ?? -Infinity;
  const expects = `comma-separated whole numbers${Number.isFinite(min) ? ` ≥ ${min}` : ''}`;
  return list((p) => { const v = toNumber(p); return Number.isInteger(v) && v >= min ? v : undefined; }, expects, metavar, String(Number.isFinite(min) ? min : 0), [`${min - 1}`, '1.5', '1e400', 'abc']);
}

/** Finite numbers, comma-separated. */
export function numList(metavar = 'X,X…'): Flag<number[], 'optional'> {
  return list((p) => { const v = toNumber(p); return Number.isFinite(v) ? v : undefined; }, 'comma-separated finite numbers', metavar, '-1,0,1', ['1e400', 'abc', '1,NaN']);
}

/**
 * A value with its own parser (parse throws an Error whose message names the flag and the value,
 * as the runner's HOOK:LAYER:POSITION or mean:M parsers do).
 */
export function custom<T>(parse: (s: string) => T, expects: string, metavar: string, example: string, edges: string[] = []): Flag<T, 'optional'> {
  const schema = z.string().transform((s, ctx) => {
    try {
      return parse(s);
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: (e as Error).message, params: { [WHOLE]: true } });
      return z.NEVER;
    }
  });
  return new Flag(schema, expects, metavar, example, 'optional', '', undefined, ['', ...edges]);
}

// ------------------------------------------------------------------ parsing

/** The command line split into a command and flag occurrences, in order. */
export interface Tokens {
  command: string;
  help: boolean;
  /** Each flag occurrence: name (no "--") and text. */
  flags: { name: string; text: string }[];
}

/**
 * Splits `cmd --flag value … | --flag=value`; a value is the next argument as it is, so values
 * that start with "-" stay values (`--doses -8,-4`). `--help` / `-h` take no value and may come
 * anywhere, also in place of the command (then the command is "help").
 * @throws UsageError for a flag without a value, a stray positional argument, or flags without a command.
 */
export function tokenize(argv: readonly string[]): Tokens {
  const hasCommand = argv.length > 0 && !argv[0].startsWith('-');
  const command = hasCommand ? argv[0] : 'help';
  const rest = hasCommand ? argv.slice(1) : argv;
  const flags: Tokens['flags'] = [];
  let help = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '-h' || a === '--help') { help = true; continue; }
    if (!a.startsWith('--') || a === '--') throw new UsageError(`unexpected argument "${a}" (flags look like --prompt TEXT or --prompt=TEXT)`);
    const eq = a.indexOf('=');
    const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
    const value = eq >= 0 ? a.slice(eq + 1) : rest[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    flags.push({ name, text: value });
  }
  if (!hasCommand && argv.length > 0 && !help) throw new UsageError('the command comes first: branchpoint <command> --flag value … (branchpoint --help lists the commands)');
  return { command, help, flags };
}

/** Edit distance (Levenshtein) of two short strings. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** The known name nearest to `name`, when it is near enough to be a typo (or a prefix). */
export function nearest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined, bestD = Infinity;
  for (const k of known) {
    const parts = name.split('-').filter(Boolean), kParts = k.split('-');
    const within = (k.startsWith(name) && name.length >= 3) || (parts.length > 1 && parts.every((p) => kParts.includes(p)));
    const d = within ? 0.5 : editDistance(name, k);
    if (d < bestD) { best = k; bestD = d; }
  }
  return bestD <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

/** Raw texts by flag name, after the strict checks. */
export type RawFlags = Map<string, string[]>;

/**
 * The flag occurrences checked against a command's schema: every flag known to it, a single-valued
 * flag at most once.
 * @param otherSchemas every command's schema by name, to say which commands take a flag this one does not.
 * @throws UsageError "--promt: unknown flag for margins; did you mean --prompt?", "--eps: margins does
 *   not take it (a flag of sinks, batch)", "--prompt given twice …".
 */
export function strictFlags(command: string, schema: Schema, tokens: Tokens, otherSchemas: ReadonlyMap<string, Schema>): RawFlags {
  const raw: RawFlags = new Map();
  const known = Object.keys(schema);
  for (const { name, text } of tokens.flags) {
    const flag = schema[name];
    if (!flag) {
      const takers = [...otherSchemas].filter(([, s]) => name in s).map(([c]) => c);
      const near = nearest(name, known);
      const hint = near ? `; did you mean --${near}?` : '';
      if (takers.length) throw new UsageError(`--${name}: ${command} does not take this flag (it is a flag of ${takers.join(', ')})${hint}`);
      throw new UsageError(`--${name}: unknown flag for ${command}${hint || '; branchpoint --help lists its flags'}`);
    }
    const seen = raw.get(name);
    if (seen && flag.presence !== 'repeated') throw new UsageError(`--${name} given twice ("${seen[0]}" and "${text}"): it takes one value${Object.entries(schema).some(([, f]) => f.presence === 'repeated') ? ` (only ${Object.entries(schema).filter(([, f]) => f.presence === 'repeated').map(([n]) => `--${n}`).join(', ')} may repeat)` : ''}`);
    raw.set(name, [...(seen ?? []), text]);
  }
  return raw;
}

/** The message for a refused value: `--name "text": expected …`, or a custom parser's own sentence. */
function issueMessage(name: string, text: string, err: z.ZodError): string {
  const issue = err.issues[0];
  if (issue && issue.code === 'custom' && (issue as { params?: Record<string, unknown> }).params?.[WHOLE]) return issue.message;
  return `--${name} "${text}": ${issue?.message ?? 'refused'}`;
}

/**
 * The typed values of the raw flags: each text through its flag's schema, defaults filled, required
 * flags checked.
 * @throws FlagError naming the flag and the value (or the missing flag).
 */
export function validateFlags<S extends Schema>(schema: S, raw: RawFlags): Values<S> {
  const out: Record<string, unknown> = {};
  for (const [name, flag] of Object.entries(schema)) {
    const texts = raw.get(name) ?? [];
    const values = texts.map((t, i) => {
      const r = flag.schema.safeParse(t);
      if (!r.success) throw new FlagError(issueMessage(flag.presence === 'repeated' && texts.length > 1 ? `${name} ${i + 1}` : name, t, r.error));
      return r.data;
    });
    if (flag.presence === 'repeated') out[name] = values;
    else if (values.length) out[name] = values[0];
    else if (flag.presence === 'required') throw new FlagError(`--${name} is required${flag.doc ? `: ${flag.doc}` : ''}`);
    else out[name] = flag.fallback;
  }
  return out as Values<S>;
}

// ------------------------------------------------------------------ usage

const FLAG_COLUMN = 30;

/** One usage line per flag: `--name METAVAR   doc; expects, default …`. */
export function flagLines(schema: Schema, indent = '    '): string[] {
  return Object.entries(schema).map(([name, f]) => {
    const head = `${indent}--${name} ${f.metavar}`;
    const facts = [
      f.presence === 'required' ? 'required' : '',
      f.presence === 'repeated' ? 'repeatable' : '',
      f.expects.startsWith('a text') || f.expects.startsWith('a non-empty text') || f.expects.startsWith('one of') || f.expects === 'true or false' || f.metavar === f.expects ? '' : f.expects,
      f.presence === 'default' ? `default ${Array.isArray(f.fallback) ? f.fallback.join(',') : String(f.fallback)}` : '',
    ].filter(Boolean).join('; ');
    const tail = [f.doc, facts ? `(${facts})` : ''].filter(Boolean).join(' ');
    return head.length + 1 >= FLAG_COLUMN ? `${head}\n${' '.repeat(FLAG_COLUMN)}${tail}` : `${head.padEnd(FLAG_COLUMN)}${tail}`;
  });
}

/** A command's usage block: synopsis (required flags first), one line per flag, then its prose. */
export function usageBlock(name: string, schema: Schema, about: string, synopsisFlags: readonly string[] = ['model']): string {
  const req = [...synopsisFlags, ...Object.keys(schema).filter((k) => schema[k].presence === 'required' && !synopsisFlags.includes(k))];
  const metavar = (k: string) => (k === 'model' ? 'DIR|ID' : schema[k]?.metavar ?? '');
  const synopsis = `  branchpoint ${name.padEnd(8)} ${req.map((k) => `--${k} ${metavar(k)}`).join(' ')} [flags]`;
  return [synopsis, ...flagLines(schema), ...(about ? about.split('\n').map((l) => `  ${l}`) : [])].join('\n');
}
