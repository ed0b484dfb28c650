/**
 * JSON that says one thing: JSON.parse keeps the last of two equal keys silently, so a file with
 * `"prompt"` twice means whichever the reader happens to keep. Every JSON file format the workbench
 * reads (experiments, values tables, prompt sets, vector files) parses through here and refuses a
 * duplicate key at any depth, naming its path — as the safetensors reader refuses a tensor named twice.
 */

/** The path (`view.name`, `vectors[0].provenance`) of the first key that occurs twice in one object, or null. `text` must be valid JSON. */
export function duplicateKeyPath(text: string): string | null {
  type Level = { obj: true; keys: Set<string>; expectKey: boolean; key: string } | { obj: false; index: number };
  const stack: Level[] = [];
  const pathOf = (levels: Level[]): string => {
    let out = '';
    for (const l of levels) out = l.obj ? (out ? `${out}.${l.key}` : l.key) : `${out}[${l.index}]`;
    return out;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top?.obj && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        top.key = key;
        if (top.keys.has(key)) return pathOf(stack);
        top.keys.add(key);
        top.expectKey = false;
      }
      i = j;
    } else if (c === '{') {
      stack.push({ obj: true, keys: new Set(), expectKey: true, key: '' });
    } else if (c === '[') {
      stack.push({ obj: false, index: 0 });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top?.obj) top.expectKey = true;
      else if (top) top.index++;
    }
  }
  return null;
}

/** A JSON text that names a key twice (the message names its path). */
export class DuplicateKeyError extends Error {
  override name = 'DuplicateKeyError';
  constructor(readonly path: string) {
    super(`names "${path}" twice (JSON keeps the last silently, so the file says two things); keep one`);
  }
}

/**
 * JSON.parse, then the duplicate-key check.
 * @throws SyntaxError as JSON.parse; DuplicateKeyError for a key named twice in one object.
 */
export function parseStrictJson(text: string): unknown {
  const v: unknown = JSON.parse(text);
  if (typeof v === 'object' && v !== null) {
    const dup = duplicateKeyPath(text);
    if (dup !== null) throw new DuplicateKeyError(dup);
  }
  return v;
}

/**
 * parseStrictJson with messages that name the place: `where` (a file, "values line 3") before the
 * duplicate key's path, or before "not valid JSON (…)" for a syntax error.
 * @throws Error naming `where` for a duplicate key or invalid JSON.
 */
export function readStrictJson(text: string, where: string): unknown {
  try {
    return parseStrictJson(text);
  } catch (e) {
    if (e instanceof DuplicateKeyError) throw new Error(`${where} ${e.message}`);
    throw new Error(`${where}: not valid JSON (${(e as Error).message})`);
  }
}

/**
 * Why a text read as UTF-8 is really UTF-16 (or UTF-32): a UTF-16 byte-order mark decoded as
 * UTF-8 (two U+FFFD, or the BOM itself when decoded right and re-read), or NUL characters between
 * the letters (ASCII text saved as UTF-16). Null when it looks like UTF-8 text.
 */
export function utf16Hint(text: string): string | null {
  const head = text.slice(0, 4096);
  if (/^\uFFFD\uFFFD/.test(head) || /^\uFFFE/.test(head)) return 'it starts with a UTF-16 byte-order mark';
  const nuls = (head.match(/\u0000/g) ?? []).length;
  if (nuls > 0 && nuls >= head.length / 4) return `${nuls} of its first ${head.length} characters are NUL, the pattern of UTF-16 text read as UTF-8`;
  return null;
}

/** @throws Error "<what> is UTF-16 …: save it as UTF-8" when utf16Hint finds UTF-16. */
export function assertUtf8Text(text: string, what: string): void {
  const hint = utf16Hint(text);
  if (hint) throw new Error(`${what} is not UTF-8 (${hint}); it looks like UTF-16 — save it as UTF-8 (e.g. "CSV UTF-8") and load it again`);
}
