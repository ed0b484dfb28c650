import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../bin/branchpoint.mjs', import.meta.url));

/**
 * Runs the `branchpoint` runner in a child process, as a user would through `npx branchpoint`.
 * @returns its exit code, stdout and stderr (never throws on a non-zero exit).
 */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env, maxBuffer: 64 << 20 });
    return { code: 0, out: stdout, err: stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout, err: x.stderr };
  }
}
