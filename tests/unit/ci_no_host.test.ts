import { expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Issue #28 kind 9: .ci/run derives its apt sources from the machine's own (tests/corpus ci/* cases) and names no host. */
it('.ci/run names no package host (no URL in it)', () => {
  const text = fs.readFileSync(path.join(import.meta.dirname, '..', '..', '.ci', 'run'), 'utf8');
  expect(text).not.toMatch(/[a-z][a-z0-9+.-]*:\/\/|\b[a-z0-9-]+\.(org|com|net|io)\b/i);
});
