/** Parsed command line: a subcommand, single-valued flags, and repeatable flags. */
export interface Args {
  command: string;
  flags: Map<string, string>;
  repeated: Map<string, string[]>;
}

const REPEATABLE = new Set(['intervention']);
/** Flags that take no value; present = "true". */
const SWITCHES = new Set(['help']);

/**
 * Parses `cmd --flag value ...` and `cmd --flag=value ...`. A value is the next argument as it is,
 * so values that start with "-" stay values (`--doses -8,-4`). `--help` and `-h` take no value and
 * may come anywhere, also in place of the command (then the command is "help").
 * @throws Error for a flag without a value, a stray positional argument, or flags without a command.
 */
export function parseArgs(argv: string[]): Args {
  const hasCommand = argv.length > 0 && !argv[0].startsWith('-');
  const command = hasCommand ? argv[0] : 'help';
  const rest = hasCommand ? argv.slice(1) : argv;
  const flags = new Map<string, string>();
  const repeated = new Map<string, string[]>();
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '-h') {
      flags.set('help', 'true');
      continue;
    }
    if (!a.startsWith('--')) throw new Error(`unexpected argument "${a}" (flags look like --prompt TEXT or --prompt=TEXT)`);
    const eq = a.indexOf('=');
    const key = eq < 0 ? a.slice(2) : a.slice(2, eq);
    let value: string | undefined;
    if (eq >= 0) value = a.slice(eq + 1);
    else if (SWITCHES.has(key)) value = 'true';
    else value = rest[++i];
    if (value === undefined) throw new Error(`--${key} needs a value`);
    if (REPEATABLE.has(key)) repeated.set(key, [...(repeated.get(key) ?? []), value]);
    else flags.set(key, value);
  }
  if (!hasCommand && argv.length > 0 && !flags.has('help')) throw new Error('the command comes first: branchpoint <command> --flag value … (branchpoint --help lists the commands)');
  return { command, flags, repeated };
}

/** What a numeric flag accepts. */
export interface NumberRule {
  /** Whole numbers only. */
  int?: boolean;
  min?: number;
  max?: number;
}

/**
 * The value of numeric flag `--key`, or `fallback` when absent. The whole text must be a number
 * ("abc", "", "2.5" for an integer flag, "1e999" are refused — Number() would give NaN, 0 or Infinity).
 * @throws Error naming the flag, the text given and what is expected.
 */
export function numberFlag(a: Args, key: string, fallback: number, rule: NumberRule = {}): number {
  const text = a.flags.get(key);
  if (text === undefined) return fallback;
  const v = text.trim() === '' ? NaN : Number(text);
  const { int = false, min = -Infinity, max = Infinity } = rule;
  const range = `${Number.isFinite(min) ? `≥ ${min}` : ''}${Number.isFinite(min) && Number.isFinite(max) ? ' and ' : ''}${Number.isFinite(max) ? `≤ ${max}` : ''}`;
  const expected = `${int ? 'a whole number' : 'a number'}${range ? ` ${range}` : ''}`;
  if (!Number.isFinite(v) || (int && !Number.isInteger(v)) || v < min || v > max) throw new Error(`--${key} "${text}": expected ${expected}`);
  return v;
}

/** An optional whole-number flag (numberFlag's checks); undefined when absent. @throws Error naming the flag. */
export function intFlag(a: Args, key: string): number | undefined {
  return a.flags.has(key) ? numberFlag(a, key, 0, { int: true }) : undefined;
}
