/**
 * Names that come from files or users and become paths or URLs (issue #8 "paths that escape"):
 * shard names in a sharded index's weight_map, file names asked of a model folder, Hub repo ids
 * and revisions. A name that could leave the model folder, or the `{repo}/resolve/{revision}/`
 * layout on a Hub host (`..`, `.`, an absolute path, a backslash, a drive, control characters), is
 * refused everywhere the same way: local folder, runner, Hub, mirror, cache keys.
 */

/** Thrown for a name that would leave its folder or URL layout. The message quotes the name (never file bytes). */
export class UnsafeNameError extends Error {
  constructor(what: string, name: string, why: string) {
    super(`${what} ${JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}…` : name)} ${why}`);
    this.name = 'UnsafeNameError';
  }
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * A file path relative to a model folder: '/'-separated segments, none empty, '.' or '..', no
 * backslash, no leading '/', no drive or URL scheme (':'), no control characters, ≤ 1024 chars.
 * @param what how the caller names it in the message, e.g. 'model.safetensors.index.json: weight_map shard'.
 * @throws UnsafeNameError saying which rule the name breaks.
 */
export function assertSafeRelativePath(path: string, what = 'file name'): string {
  if (typeof path !== 'string' || path.length === 0) throw new UnsafeNameError(what, String(path), 'is empty (expected a file name inside the model folder)');
  if (path.length > 1024) throw new UnsafeNameError(what, path, 'is longer than 1024 characters');
  if (CONTROL.test(path)) throw new UnsafeNameError(what, path, 'holds control characters');
  if (path.includes('\\')) throw new UnsafeNameError(what, path, "holds a backslash (paths inside a model folder use '/')");
  if (path.startsWith('/')) throw new UnsafeNameError(what, path, 'is an absolute path (expected a name inside the model folder)');
  if (path.includes(':')) throw new UnsafeNameError(what, path, "holds ':' (a drive or URL scheme; expected a name inside the model folder)");
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.' || seg === '..') throw new UnsafeNameError(what, path, `has a "${seg}" path segment, which could leave the model folder`);
  }
  return path;
}

/** Hub repo id segment rule (huggingface_hub validate_repo_id): letters, digits, '-', '_', '.', ≤ 96 chars, not '.' or '..' nor starting/ending with '.' or '-'. */
const REPO_SEGMENT = /^[A-Za-z0-9_](?:[\w.-]{0,94}[A-Za-z0-9_])?$/;

/**
 * A Hub repo id: `name` or `org/name`, each segment as REPO_SEGMENT, no '--' or '..'.
 * @throws UnsafeNameError naming the id and the rule.
 */
export function assertSafeRepoId(repo: string): string {
  const segs = typeof repo === 'string' ? repo.split('/') : [];
  if (segs.length < 1 || segs.length > 2 || !segs.every((s) => REPO_SEGMENT.test(s)) || repo.includes('..') || repo.includes('--')) {
    throw new UnsafeNameError('Hub repo id', String(repo), "is not org/name (letters, digits, '-', '_', '.'; no '..', '--', and no segment that is '.', starts or ends with '.' or '-')");
  }
  return repo;
}

/**
 * A revision (branch, tag, commit, refs/pr/N): no '.' / '..' / empty segments, no backslash,
 * no control characters, ≤ 256 chars. It is URL-encoded as one segment, but '.' and '..' are
 * not changed by encodeURIComponent and would be resolved by URL normalisation.
 * @throws UnsafeNameError naming the revision and the rule.
 */
export function assertSafeRevision(rev: string): string {
  if (typeof rev !== 'string' || rev.length === 0 || rev.length > 256 || CONTROL.test(rev) || rev.includes('\\') || rev.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw new UnsafeNameError('revision', String(rev), "is not a branch, tag or commit (no empty, '.' or '..' segments, backslashes or control characters)");
  }
  return rev;
}
