import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { ModelFiles } from './model_files';

/** A model folder on the local disk (Node only: the runner and tests). */
export class NodeFiles implements ModelFiles {
  readonly label: string;
  constructor(private readonly dir: string) {
    this.label = `${path.basename(dir)} (${dir})`;
  }
  async has(p: string) {
    return fs.stat(path.join(this.dir, p)).then((s) => s.isFile(), () => false);
  }
  async bytes(p: string) {
    try {
      return new Uint8Array(await fs.readFile(path.join(this.dir, p)));
    } catch {
      throw new Error(`${this.label}: ${p} is missing or unreadable`);
    }
  }
  async range(p: string, start: number, end: number) {
    const fh = await fs.open(path.join(this.dir, p));
    try {
      const buf = new Uint8Array(end - start);
      await fh.read(buf, 0, end - start, start);
      return buf;
    } finally {
      await fh.close();
    }
  }
  async size(p: string) { return (await fs.stat(path.join(this.dir, p))).size; }
}
