import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Every relative link (markdown or HTML src/href) in README.md and docs/*.md points at a file of the repository, and every
 * #anchor at a heading of its target (GitHub's heading ids: lower case, punctuation dropped,
 * spaces as hyphens, repeats numbered -1, -2, …). Links inside code (fenced or `inline`) are text.
 */
const ROOT = path.join(__dirname, '..', '..');
const DOCS = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The file's lines outside fenced code blocks, with inline code spans blanked. */
function prose(text: string): string[] {
  let fenced = false;
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) { fenced = !fenced; continue; }
    if (!fenced) out.push(line.replace(/`[^`]*`/g, '``'));
  }
  return out;
}

/** GitHub's id of a heading text. */
export function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/<[^>]+>/g, '').replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const ids = new Set<string>();
  let fenced = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) { fenced = !fenced; continue; }
    const m = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1].replace(/`/g, ''));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  return ids;
}

/** [text](target) and ![alt](target) links, and HTML src="…" / href="…" attributes, of a markdown file, with their line numbers. */
function links(file: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  prose(fs.readFileSync(path.join(ROOT, file), 'utf8')).forEach((text, i) => {
    for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ line: i + 1, target: m[1] });
    for (const m of text.matchAll(/<(?:img|a)\s[^>]*?\b(?:src|href)="([^"]+)"/g)) out.push({ line: i + 1, target: m[1] });
  });
  return out;
}

describe('documentation links', () => {
  it.each(DOCS)('%s: every relative link and anchor resolves', (file) => {
    const broken: string[] = [];
    for (const { target } of links(file)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
      const [p, anchor] = target.split('#', 2);
      const dest = p === '' ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), decodeURIComponent(p));
      if (!dest.startsWith(ROOT + path.sep) && dest !== ROOT) { broken.push(`${target} (outside the repository)`); continue; }
      if (!fs.existsSync(dest)) { broken.push(`${target} (no such file)`); continue; }
      if (anchor !== undefined && dest.endsWith('.md') && !anchors(dest).has(anchor)) broken.push(`${target} (no heading with id "${anchor}")`);
    }
    expect(broken, `${file}: broken links`).toEqual([]);
  });

  it('finds the links it checks (the README links the docs and the screenshot)', () => {
    const targets = links('README.md').map((l) => l.target);
    expect(targets).toContain('docs/screenshot.png');
    expect(targets).toContain('docs/runner.md');
    expect(anchors(path.join(ROOT, 'docs', 'guide.md')).has('command-line')).toBe(true);
  });
});
