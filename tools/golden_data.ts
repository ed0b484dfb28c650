import * as fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as path from 'node:path';
import type { Plugin } from 'vite';

/** The folders of the shared test data the dev and preview servers serve. */
export const GOLDEN_FOLDERS = ['models', 'fixtures', 'fixtures-moe', 'saes'] as const;

/**
 * Whether `file` lies inside `folder` (or is it), compared as resolved paths: path.relative is
 * neither "..", nor starts with "../", nor is absolute. A string prefix test is not enough:
 * `/shared/models-private/x` starts with `/shared/models`.
 */
export function isInside(folder: string, file: string): boolean {
  const rel = path.relative(path.resolve(folder), path.resolve(file));
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * Where a request path of the golden data resolves, or why not: 'pass' (not golden data, or a file
 * public/ has: left to Vite), 'bad' (a malformed %-escape, 400), 'outside' (resolves outside its
 * folder, e.g. `/models/..%2fmodels-private%2fsecret.txt`, 403), else the file.
 */
export function resolveGolden(rawUrl: string, shared: string, publicDir: string): { kind: 'pass' | 'bad' | 'outside' } | { kind: 'file'; file: string } {
  let url: string;
  try {
    url = decodeURIComponent(rawUrl.split('?')[0]);
  } catch {
    return { kind: 'bad' };
  }
  const top = /^\/(models|fixtures|fixtures-moe|saes)\//.exec(url);
  if (!top) return { kind: 'pass' };
  const folder = path.join(shared, top[1]);
  const file = path.join(shared, url.slice(1));
  if (!isInside(folder, file)) return { kind: 'outside' };
  const inPublic = path.join(publicDir, url.slice(1));
  if (isInside(path.join(publicDir, top[1]), inPublic) && fs.existsSync(inPublic)) return { kind: 'pass' };
  return { kind: 'file', file };
}

/**
 * The middleware: serves the read-only golden data in `shared` under /models/, /fixtures/, /fixtures-moe/ and
 * /saes/, leaving a path public/ has to Vite. 400 for a malformed escape, 403 for a path that
 * resolves outside its folder, 404 for a missing file; HEAD and single-range GET, as the Hub does.
 */
export function goldenDataHandler(shared: string, publicDir: string) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    const r = resolveGolden(req.url ?? '', shared, publicDir);
    if (r.kind === 'pass') return next();
    if (r.kind === 'bad') {
      res.statusCode = 400; // a malformed %-escape (/models/%E0%A4%A) is the client's error, not a 500
      res.end('bad request: malformed URL encoding');
      return;
    }
    if (r.kind === 'outside') {
      res.statusCode = 403;
      res.end('forbidden: the path leaves its folder');
      return;
    }
    if (r.kind !== 'file') return;
    const file = r.file;
    if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.statusCode = 404;
      res.end('not found');
      return;
    }
    const size = fs.statSync(file).size;
    res.setHeader('accept-ranges', 'bytes');
    const m = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
    if (m) {
      const start = Number(m[1]);
      const end = m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
      res.statusCode = 206;
      res.setHeader('content-range', `bytes ${start}-${end}/${size}`);
      res.setHeader('content-length', String(end - start + 1));
      if (req.method === 'HEAD') return void res.end();
      fs.createReadStream(file, { start, end }).pipe(res);
      return;
    }
    res.setHeader('content-length', String(size));
    if (req.method === 'HEAD') return void res.end();
    fs.createReadStream(file).pipe(res);
  };
}

/**
 * Test data only: the golden data (../shared or $BRANCHPOINT_SHARED) in dev and preview, for the
 * harness pages and benchmarks, with nothing copied into the repo. A path that exists in public/
 * (the bundled model) is left to Vite, so the app sees exactly what a static host serves.
 */
export function goldenData(shared: string, publicDir: string): Plugin {
  const handler = goldenDataHandler(shared, publicDir);
  return {
    name: 'branchpoint-golden-data',
    configureServer: (server) => { server.middlewares.use(handler); },
    configurePreviewServer: (server) => { server.middlewares.use(handler); },
  };
}
