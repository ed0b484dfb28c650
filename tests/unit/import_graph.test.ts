/**
 * The engine's floor plan (issue 22, docs/architecture.md): workers/engine has no import circle,
 * and every import between its folders runs down the floors written in docs/architecture.md (the
 * `floors` block, top floor first) or is one of its listed `exceptions`. Type-only imports count:
 * a type that closes a circle is a definition in the wrong place. Imports are read with the
 * TypeScript pre-processor (static, `import type`, re-exports, dynamic import()).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const ENGINE = path.join(ROOT, 'workers', 'engine');
const FACE = 'face';

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : /\.ts$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** An engine file's path relative to workers/engine, e.g. "model/span.ts". */
const rel = (abs: string) => path.relative(ENGINE, abs).split(path.sep).join('/');

/** The floor (top-level folder) a file stands on; files directly in workers/engine are the face. */
const floorOf = (file: string) => (file.includes('/') ? file.split('/')[0] : FACE);

function resolve(from: string, spec: string): string | null {
  const base = path.resolve(path.dirname(from), spec.replace(/\?.*$/, ''));
  for (const c of [base, `${base}.ts`, path.join(base, 'index.ts')]) if (fs.existsSync(c) && fs.statSync(c).isFile()) return c;
  return null;
}

/** file → the engine files it imports (relative to workers/engine). */
function engineGraph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of sources(ENGINE)) {
    const info = ts.preProcessFile(fs.readFileSync(f, 'utf8'), true, true);
    const targets = info.importedFiles.map((i) => i.fileName).filter((s) => s.startsWith('.')).map((s) => resolve(f, s));
    g.set(rel(f), [...new Set(targets.filter((t): t is string => t !== null && t.startsWith(ENGINE + path.sep)).map(rel))]);
  }
  return g;
}

/** The circles of a graph: its strongly connected components of more than one file, or a file importing itself (Tarjan). */
function circles(g: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], on = new Set<string>(), out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next); low.set(v, next); next++; stack.push(v); on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do { w = stack.pop()!; on.delete(w); c.push(w); } while (w !== v);
      if (c.length > 1 || (g.get(v) ?? []).includes(v)) out.push(c.sort());
    }
  };
  for (const v of [...g.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/** The fenced block of docs/architecture.md with this info string, as its non-empty lines. */
function docBlock(name: string): string[] {
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const m = new RegExp('```' + name + '\\n([\\s\\S]*?)```').exec(doc);
  if (!m) throw new Error(`docs/architecture.md has no \`\`\`${name} block`);
  return m[1].split('\n').map((l) => l.trim()).filter(Boolean);
}

/** Floor name → height (0 = bottom), from the floors block (top floor first). */
function floors(): Map<string, number> {
  const names = docBlock('floors').map((l) => l.split(/\s+/)[0]);
  return new Map(names.map((n, i) => [n, names.length - 1 - i]));
}

/** "ops -> backend/backend.ts" lines: a floor that may import one file of a higher floor. */
function exceptions(): Set<string> {
  return new Set(docBlock('exceptions').map((l) => l.replace(/\s*->\s*/, ' -> ')));
}

/** Imports from a lower floor to a higher one, as "from -> to", not counting the listed exceptions. */
function upwardImports(g: Map<string, string[]>, height: Map<string, number>, allowed: Set<string>): string[] {
  const out: string[] = [];
  for (const [from, targets] of g) {
    for (const to of targets) {
      const a = floorOf(from), b = floorOf(to);
      if (a === b || height.get(a)! > height.get(b)!) continue;
      if (!allowed.has(`${a} -> ${to}`)) out.push(`${from} -> ${to}`);
    }
  }
  return out.sort();
}

describe('the engine floor plan (docs/architecture.md)', () => {
  const g = engineGraph();

  it('reads the engine: more than 100 files, each import resolved', () => {
    expect(g.size).toBeGreaterThan(100);
    expect(g.get('engine.ts')).toContain('model/hooks.ts');
  });

  it('workers/engine has no import circle, type-only imports included', () => {
    expect(circles(g)).toEqual([]);
  });

  it('every folder of workers/engine stands on one floor of the plan', () => {
    const height = floors();
    const folders = [...new Set([...g.keys()].map(floorOf))].sort();
    expect(folders.filter((f) => !height.has(f))).toEqual([]);
    expect([...height.keys()].filter((f) => !folders.includes(f))).toEqual([]);
  });

  it('every import between folders runs down the floors, or is a listed exception', () => {
    expect(upwardImports(g, floors(), exceptions())).toEqual([]);
  });

  it('the exceptions import nothing from the floor that may import them (no circle through them)', () => {
    for (const line of exceptions()) {
      const [from, to] = line.split(' -> ');
      expect(g.has(to), `${to} (docs/architecture.md exceptions) is an engine file`).toBe(true);
      expect((g.get(to) ?? []).filter((t) => floorOf(t) === from), line).toEqual([]);
    }
  });

  it('the checks catch what they claim: a circle and an upward import in a made-up graph', () => {
    const made = new Map([['model/a.ts', ['model/b.ts']], ['model/b.ts', ['studies/c.ts']], ['studies/c.ts', ['model/a.ts']]]);
    expect(circles(made)).toEqual([['model/a.ts', 'model/b.ts', 'studies/c.ts']]);
    expect(upwardImports(made, floors(), exceptions())).toEqual(['model/b.ts -> studies/c.ts']);
  });
});
