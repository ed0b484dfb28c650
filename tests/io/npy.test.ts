import { describe, expect, it } from 'vitest';
import { writeNpyArray } from '../../workers/engine/io/npy';

describe('writeNpyArray', () => {
  it('writes the format-1.0 header numpy writes for float32 (2, 3) and the values row-major after byte 128', () => {
    const b = writeNpyArray(Float32Array.from([1, 2, 3, 4, 5, -6.5]), [2, 3]);
    expect(Array.from(b.subarray(0, 8))).toEqual([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
    const hlen = b[8] | (b[9] << 8);
    expect(10 + hlen).toBe(128); // 10 + 60 header characters + "\n", padded to a multiple of 64
    const header = new TextDecoder().decode(b.subarray(10, 10 + hlen));
    // The dict numpy.save writes for a float32 (2, 3) array, space-padded, ending in a newline.
    expect(header.trimEnd()).toBe("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    expect(header.endsWith('\n')).toBe(true);
    expect(b.length).toBe(128 + 6 * 4);
    const dv = new DataView(b.buffer, b.byteOffset);
    expect([0, 1, 2, 3, 4, 5].map((i) => dv.getFloat32(128 + 4 * i, true))).toEqual([1, 2, 3, 4, 5, -6.5]);
  });

  it('writes a 1-D shape as (d,) and a 3-D one as (L, T, D)', () => {
    const h = (b: Uint8Array) => new TextDecoder().decode(b.subarray(10, 10 + (b[8] | (b[9] << 8))));
    expect(h(writeNpyArray(new Float32Array(4), [4]))).toContain("'shape': (4,)");
    expect(h(writeNpyArray(new Float32Array(24), [2, 3, 4]))).toContain("'shape': (2, 3, 4)");
  });

  it('refuses a shape that does not hold the data', () => {
    expect(() => writeNpyArray(new Float32Array(5), [2, 3])).toThrow('.npy shape (2, 3) holds 6 values, but 5 were given');
    expect(() => writeNpyArray(new Float32Array(0), [-1])).toThrow('non-negative integers');
  });
});
