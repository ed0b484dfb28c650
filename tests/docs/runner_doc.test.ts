import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { RUNNER_DOC, runnerDoc } from '../../tools/runner_doc';
import { COMMANDS } from '../../cli/commands';

/** docs/runner.md is generated from the commands' usage strings (cli/commands.ts), so it cannot drift from --help. */
describe('docs/runner.md', () => {
  it('is what tools/runner_doc.ts generates from the command table (regenerate: npx tsx tools/runner_doc.ts --write)', () => {
    expect(fs.readFileSync(RUNNER_DOC, 'utf8'), 'docs/runner.md is stale: run npx tsx tools/runner_doc.ts --write').toBe(runnerDoc());
  });

  it('documents every command of the table with its usage block', () => {
    const doc = runnerDoc();
    for (const c of COMMANDS) {
      expect(doc).toContain(`### ${c.name}\n`);
      expect(doc).toContain(c.usage);
    }
  });
});
