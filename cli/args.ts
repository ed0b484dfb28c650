/** Parsed command line: a subcommand, single-valued flags, and repeatable flags. */
export interface Args {
  command: string;
  flags: Map<string, string>;
  repeated: Map<string, string[]>;
}

const REPEATABLE = new Set(['intervention']);

/**
 * Parses `cmd --flag value ...`.
 * @throws Error for a flag without a value or a stray positional argument.
 */
export function parseArgs(argv: string[]): Args {
  const [command = 'help', ...rest] = argv;
  const flags = new Map<string, string>();
  const repeated = new Map<string, string[]>();
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument "${a}" (flags look like --prompt TEXT)`);
    const key = a.slice(2);
    const value = rest[i + 1];
    if (value === undefined) throw new Error(`--${key} needs a value`);
    i++;
    if (REPEATABLE.has(key)) repeated.set(key, [...(repeated.get(key) ?? []), value]);
    else flags.set(key, value);
  }
  return { command, flags, repeated };
}
