import { promises as fs, statSync } from 'node:fs';
import * as path from 'node:path';
import type { ModelFiles } from './model_files';
import { assertSafeRelativePath } from './safe_names';

/** A model folder on the local disk (Node only: the runner and tests). */
export class NodeFiles implements ModelFiles {
  readonly label: string;
  /** @throws Error when `dir` is a file (e.g. --model pointing at model.safetensors): a model is a folder. */
  constructor(private readonly dir: string) {
    this.label = `${path.basename(dir)} (${dir})`;
    const st = statSync(dir, { throwIfNoEntry: false });
    if (st && !st.isDirectory()) throw new Error(`${dir} is a file, not a folder: give the folder that holds the model's files (config.json, tokenizer.json, the weights)${st.isFile() ? `, e.g. ${path.dirname(dir)}` : ''}`);
  }
  /** path inside the folder. @throws UnsafeNameError for a name that could leave it (io/safe_names.ts). */
  private at(p: string): string {
    return path.join(this.dir, assertSafeRelativePath(p));
  }
  async has(p: string) {
    return fs.stat(this.at(p)).then((s) => s.isFile(), () => false);
  }
  async bytes(p: string) {
    const file = this.at(p);
    try {
      return new Uint8Array(await fs.readFile(file));
    } catch {
      throw new Error(`${this.label}: ${p} is missing or unreadable`);
    }
  }
  async range(p: string, start: number, end: number) {
    const fh = await fs.open(this.at(p));
    try {
      const buf = new Uint8Array(end - start);
      await fh.read(buf, 0, end - start, start);
      return buf;
    } finally {
      await fh.close();
    }
  }
  async size(p: string) { return (await fs.stat(this.at(p))).size; }
}
