/**
 * The app reaches the engine through one door (issue 22): every value `app/` uses from
 * `workers/engine` at runtime comes through workers/shared.ts, so moving an engine file rewrites
 * that one file's paths, and the views import no engine module at all (not even a type). Reads
 * each app/**\/*.ts(x) with the TypeScript parser: `import type`, `export type … from` and imports
 * whose every name is marked `type` are erased from the bundle and allowed outside the views; any
 * other import, re-export or dynamic import() of a workers/engine module fails.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const APP = path.join(ROOT, 'app');
const ENGINE = path.join(ROOT, 'workers', 'engine');

/** One import of a module by an app file. */
interface AppImport {
  /** The importing file, relative to the repository root. */
  file: string;
  /** The imported module, relative to the repository root (relative specifiers resolved; a package name as written). */
  target: string;
  /** Erased when compiled: nothing of it exists at runtime. */
  typeOnly: boolean;
  line: number;
}

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Whether an import or export declaration is erased: `import type`, `export type`, or every named binding marked `type`. */
function erased(s: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(s)) {
    if (s.isTypeOnly) return true;
    return !!s.exportClause && ts.isNamedExports(s.exportClause) && s.exportClause.elements.length > 0 && s.exportClause.elements.every((e) => e.isTypeOnly);
  }
  const c = s.importClause;
  if (!c) return false; // `import 'x'`: run for its effects
  if (c.isTypeOnly) return true;
  return !c.name && !!c.namedBindings && ts.isNamedImports(c.namedBindings) && c.namedBindings.elements.length > 0 && c.namedBindings.elements.every((e) => e.isTypeOnly);
}

/** Every import, re-export and dynamic import() in the app's sources. */
function appImports(): AppImport[] {
  const out: AppImport[] = [];
  for (const file of sources(APP)) {
    const text = fs.readFileSync(file, 'utf8');
    const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
    const add = (spec: string, typeOnly: boolean, node: ts.Node) => out.push({
      file: path.relative(ROOT, file),
      target: spec.startsWith('.') ? path.relative(ROOT, path.resolve(path.dirname(file), spec)) : spec,
      typeOnly,
      line: src.getLineAndCharacterOfPosition(node.getStart(src)).line + 1,
    });
    const visit = (node: ts.Node) => {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        add(node.moduleSpecifier.text, erased(node), node);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
        add(node.arguments[0].text, false, node);
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
        add(node.argument.literal.text, true, node); // `typeof import('…')` in a type
      }
      ts.forEachChild(node, visit);
    };
    visit(src);
  }
  return out;
}

const inEngine = (target: string) => {
  const rel = path.relative(ENGINE, path.join(ROOT, target));
  return !rel.startsWith('..') && !path.isAbsolute(rel);
};
const where = (i: AppImport) => `${i.file}:${i.line} imports ${i.target}`;

describe('the app reaches the engine only through workers/shared.ts', () => {
  const imports = appImports();

  it('the scan reads the app’s imports (it sees the door used)', () => {
    expect(imports.filter((i) => i.target === path.join('workers', 'shared')).length).toBeGreaterThan(10);
  });

  it('no app module imports a workers/engine module at runtime', () => {
    expect(imports.filter((i) => inEngine(i.target) && !i.typeOnly).map(where)).toEqual([]);
  });

  it('no view imports a workers/engine module, not even a type', () => {
    expect(imports.filter((i) => i.file.startsWith(path.join('app', 'views') + path.sep) && inEngine(i.target)).map(where)).toEqual([]);
  });
});
