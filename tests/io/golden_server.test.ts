import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createServer, preview, type PreviewServer, type ViteDevServer } from 'vite';
import { isInside } from '../../tools/golden_data';

/**
 * Issue #28 kind 4: the dev and preview servers (vite.config.ts, tools/golden_data.ts) started for
 * real over a temp shared root with a sibling folder models-private/ beside models/: a request that
 * resolves into the sibling is 403, never served.
 */
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-golden-'));
const shared = path.join(root, 'shared');
const dist = path.join(root, 'dist');
let dev: ViteDevServer, prev: PreviewServer;

beforeAll(async () => {
  for (const [f, t] of [['shared/models/ok.txt', 'ok'], ['shared/models-private/secret.txt', 'SECRET'], ['dist/index.html', '<!doctype html>']]) {
    fs.mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    fs.writeFileSync(path.join(root, f), t);
  }
  process.env.BRANCHPOINT_SHARED = shared; // read when vite.config.ts loads
  const configFile = path.join(import.meta.dirname, '..', '..', 'vite.config.ts');
  dev = await createServer({ configFile, logLevel: 'silent', server: { port: 0, host: '127.0.0.1' } });
  await dev.listen();
  prev = await preview({ configFile, logLevel: 'silent', build: { outDir: dist }, preview: { port: 0, host: '127.0.0.1' } });
}, 60_000);

afterAll(async () => {
  await dev?.close();
  await new Promise<void>((r) => (prev ? prev.httpServer.close(() => r()) : r()));
  delete process.env.BRANCHPOINT_SHARED;
  fs.rmSync(root, { recursive: true, force: true });
});

const base = (s: ViteDevServer | PreviewServer) => s.resolvedUrls!.local[0].replace(/\/$/, '');

describe('golden-data guard on the real servers', () => {
  for (const which of ['dev', 'preview'] as const) {
    it(`${which}: /models/..%2fmodels-private%2fsecret.txt is 403; /models/ok.txt is served`, async () => {
      const b = base(which === 'dev' ? dev : prev);
      const bad = await fetch(`${b}/models/..%2fmodels-private%2fsecret.txt`);
      expect(bad.status).toBe(403);
      expect(await bad.text()).not.toContain('SECRET');
      const good = await fetch(`${b}/models/ok.txt`);
      expect(good.status).toBe(200);
      expect(await good.text()).toBe('ok');
    });
  }
  it('isInside compares resolved paths, not string prefixes', () => {
    expect(isInside('/a/models', '/a/models-private/x')).toBe(false);
    expect(isInside('/a/models', '/a/models/../models-private/x')).toBe(false);
    expect(isInside('/a/models', '/a/models/x/y')).toBe(true);
    expect(isInside('/a/models', '/a/models')).toBe(true);
    expect(isInside('/a/models', '/a/models/..x')).toBe(true); // a name starting with "..", inside
  });
});
