/**
 * Every runner command docs/guide.md tells a user to run is run here verbatim (issue 29 item 12: a
 * `report` with "…" placeholders, a `girl.npy` no earlier command made, SAE_DIR placeholders). The
 * guide's ```bash blocks are read in order, continuation lines joined, and each `npx branchpoint …`
 * line is run as `node bin/branchpoint.mjs …` from the repository root through the shell (so its
 * quoting is the user's); each must exit 0 and print JSON (one document, or one per line).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '..', '..');

/** The guide's `npx branchpoint` commands, in order, each on one line. */
export function guideCommands(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/^```bash\n([\s\S]*?)^```/gm)].map((m) => m[1]);
  return blocks.flatMap((b) => b.replace(/\\\n\s*/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l.startsWith('npx branchpoint ')));
}

/** Output that is JSON: one document, or one per line (batch prints JSON lines). */
function isJson(out: string): boolean {
  try { JSON.parse(out); return true; } catch { /* lines */ }
  const lines = out.split('\n').filter((l) => l.trim());
  return lines.length > 0 && lines.every((l) => { try { JSON.parse(l); return true; } catch { return false; } });
}

const commands = guideCommands(fs.readFileSync(path.join(ROOT, 'docs', 'guide.md'), 'utf8'));

describe('docs/guide.md runner commands run as written', () => {
  it('the guide has runner commands, none with a placeholder', () => {
    expect(commands.length).toBeGreaterThan(10);
    for (const c of commands) expect(c, c).not.toMatch(/…|SAE_DIR|\bFILE\b|<[a-z]+>/);
  });

  // in order: a later command uses the files an earlier one writes (/tmp/happy.npy, /tmp/girl.npy)
  for (const [i, c] of commands.entries()) {
    it(`${i + 1}: ${c.slice(0, 90)}`, () => {
      const cmd = c.replace(/^npx branchpoint /, `${JSON.stringify(process.execPath)} bin/branchpoint.mjs `);
      let out = '';
      try {
        out = execFileSync('/bin/sh', ['-c', cmd], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
      } catch (e) {
        const err = e as { status: number; stderr: string };
        expect.fail(`exit ${err.status}: ${err.stderr.slice(0, 600)}`);
      }
      expect(isJson(out), out.slice(0, 300)).toBe(true);
    }, 180_000);
  }
});
