import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFiles } from '../../workers/engine/io/node_files';

/**
 * A local folder's file over 2 GiB (Llama-3.2-1B's single model.safetensors is 2.47 GB) is read
 * whole: fs.readFile refuses files over 2 GiB, so NodeFiles reads in pieces. The file is sparse
 * (no disk used); marker bytes either side of 2^31 and at the end must come back where they were,
 * and the progress callback must reach the size. Holds 2.2 GB of memory for a few seconds.
 */
describe('NodeFiles.bytes on a file over 2 GiB', () => {
  it('returns every byte, in place, with progress up to the size', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-large-'));
    const file = path.join(dir, 'model.safetensors');
    const size = 2 ** 31 + 200 * 2 ** 20;
    try {
      fs.writeFileSync(file, '');
      fs.truncateSync(file, size);
      const fd = fs.openSync(file, 'r+');
      const marks: [number, number][] = [[0, 7], [2 ** 31 - 1, 11], [2 ** 31, 13], [size - 1, 17]];
      for (const [at, v] of marks) fs.writeSync(fd, Uint8Array.of(v), 0, 1, at);
      fs.closeSync(fd);
      let last = 0;
      const b = await new NodeFiles(dir).bytes('model.safetensors', (loaded, total) => { expect(total).toBe(size); last = loaded; });
      expect(b.length).toBe(size);
      for (const [at, v] of marks) expect(b[at]).toBe(v);
      expect(b[2 ** 31 + 1]).toBe(0);
      expect(last).toBe(size);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
