import { promises as fs, statSync } from 'node:fs';
import * as path from 'node:path';
import type { ModelFiles } from './model_files';
import { assertSafeRelativePath } from './safe_names';

/** The most bytes one read asks for (below fs's 2 GiB limit on a single read). */
const READ_PIECE = 1 << 30;

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
  /**
   * The whole file, read in pieces of at most 1 GiB: fs.readFile refuses files over 2 GiB, and
   * Llama-3.2-1B's single model.safetensors is 2.47 GB.
   * @throws Error naming the file when it is missing or unreadable.
   */
  async bytes(p: string, onProgress?: (loaded: number, total: number) => void) {
    const file = this.at(p);
    let fh: fs.FileHandle;
    try {
      fh = await fs.open(file);
    } catch {
      throw new Error(`${this.label}: ${p} is missing or unreadable`);
    }
    try {
      const size = (await fh.stat()).size;
      const buf = new Uint8Array(size);
      for (let got = 0; got < size;) {
        const { bytesRead } = await fh.read(buf, got, Math.min(READ_PIECE, size - got), got);
        if (bytesRead === 0) throw new Error(`${this.label}: ${p} ended at byte ${got} of ${size} while being read`);
        got += bytesRead;
        onProgress?.(got, size);
      }
      return buf;
    } catch (e) {
      throw new Error(`${this.label}: ${p} is missing or unreadable (${(e as Error).message})`, { cause: e });
    } finally {
      await fh.close();
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
