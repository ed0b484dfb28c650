import { describe, expect, it } from 'vitest';
import { formatOf, readNpy, readVectorFile, writeVectorFile } from '../../workers/engine/steering/vector_io';
import { readNpyArray } from '../../workers/engine/io/npy';
import type { SteeringVector } from '../../workers/engine/steering/vector';
import { npy } from '../corpus/inputs';

/**
 * Steering-vector files beyond vector_io.test.ts: .npy versions 2 and 3, byte orders, alignment and
 * every malformed-header message (bytes built here by the NumPy format spec,
 * https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html); .safetensors shapes,
 * dtypes, tensor choice and metadata (built here by the safetensors spec: u64 LE header length,
 * JSON header, data); .json optional keys; and the writer's 8-byte data alignment.
 */
const enc = (s: string) => new TextEncoder().encode(s);

const dict = (descr: string, shape: string, fortran = 'False') => `{'descr': '${descr}', 'fortran_order': ${fortran}, 'shape': ${shape}, }\n`;
function f4(values: number[], little = true): Uint8Array {
  const b = new Uint8Array(4 * values.length), dv = new DataView(b.buffer);
  values.forEach((x, i) => dv.setFloat32(4 * i, x, little));
  return b;
}
function f8(values: number[], little = true): Uint8Array {
  const b = new Uint8Array(8 * values.length), dv = new DataView(b.buffer);
  values.forEach((x, i) => dv.setFloat64(8 * i, x, little));
  return b;
}

/** A .safetensors file: u64 LE header length, the JSON header, the data. */
function st(header: object, data: Uint8Array): Uint8Array {
  const h = enc(JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

describe('formatOf', () => {
  it('the extension, any case; anything else is refused', () => {
    expect(formatOf('a/b/V.NPY')).toBe('npy');
    expect(formatOf('x.SafeTensors')).toBe('safetensors');
    expect(formatOf('x.json')).toBe('json');
    for (const name of ['v.npy.bak', 'npy', 'v.npz', 'v.']) expect(() => formatOf(name)).toThrow(`${name}: unknown vector file type; use .npy, .safetensors or .json`);
  });
});

describe('.npy by the format spec', () => {
  it('versions 2 and 3 (u32 header length; v3 header in UTF-8) read like version 1', () => {
    const data = f4([1, -2, 0.25]);
    expect(readNpy(npy(dict('<f4', '(3,)'), data, 2))).toEqual(Float32Array.from([1, -2, 0.25]));
    expect(readNpy(npy(dict('<f4', '(3,)'), data, 3))).toEqual(Float32Array.from([1, -2, 0.25]));
    expect(readNpy(npy(dict('|f4', '(3,)'), data, 1))).toEqual(Float32Array.from([1, -2, 0.25]));
  });

  it('a version-2 header of 65 600 bytes (the reason v2 exists: more than a u16 length can say) reads its data after the whole header', () => {
    // NumPy pads the header dict with spaces and ends it with \n; 65 600 = 0x10040 has low 16 bits 0x40,
    // so a u16 read of the length would take the data from byte 12 + 64, inside the padding.
    const header = dict('<f4', '(3,)').slice(0, -1).padEnd(65_599, ' ') + '\n';
    expect(header.length).toBe(65_600);
    const file = npy(header, f4([1, -2, 0.25]), 2);
    expect(new DataView(file.buffer).getUint32(8, true)).toBe(65_600);
    expect(readNpy(file)).toEqual(Float32Array.from([1, -2, 0.25]));
  });

  it('big-endian float64 and float32, and float32 data that does not start 4-byte aligned', () => {
    expect(readNpy(npy(dict('>f8', '(2,)'), f8([0.1, -3], false)))).toEqual(Float32Array.from([0.1, -3]));
    expect(readNpy(npy(dict('>f4', '(2,)'), f4([7.5, -0.125], false)))).toEqual(Float32Array.from([7.5, -0.125]));
    // a header of odd length puts the data at an odd offset
    const odd = npy(`{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}`, f4([1.5, 2.5]));
    expect((odd.length - 8) % 4).not.toBe(0);
    expect(readNpy(odd)).toEqual(Float32Array.from([1.5, 2.5]));
    // the same bytes inside a larger buffer at offset 1 (a subarray)
    const big = new Uint8Array(1 + 200);
    const file = npy(dict('<f4', '(2,)'), f4([3, 4]));
    big.set(file, 1);
    expect(readNpy(big.subarray(1, 1 + file.length))).toEqual(Float32Array.from([3, 4]));
  });

  it('readNpyArray: any C-order shape, with the shape; Fortran order only when it lays out as C order', () => {
    const got = readNpyArray(npy(dict('<f4', '(2, 3)'), f4([1, 2, 3, 4, 5, 6])));
    expect(got.shape).toEqual([2, 3]);
    expect(got.data).toEqual(Float32Array.from([1, 2, 3, 4, 5, 6]));
    expect(readNpy(npy(dict('<f4', '(1, 3)', 'True'), f4([1, 2, 3])))).toEqual(Float32Array.from([1, 2, 3]));
    expect(() => readNpyArray(npy(dict('<f4', '(2, 3)', 'True'), f4([1, 2, 3, 4, 5, 6])), 'f.npy'))
      .toThrow('f.npy: shape (2, 3) is stored in Fortran order; save it with numpy.ascontiguousarray');
  });

  it('every malformed file says what is wrong', () => {
    expect(() => readNpy(enc('\x93NUMP'), 'a.npy')).toThrow('a.npy: not a .npy file (no \\x93NUMPY magic)');
    expect(() => readNpy(enc('xNUMPY0000000'), 'a.npy')).toThrow('a.npy: not a .npy file');
    const v4 = npy(dict('<f4', '(1,)'), f4([1]));
    v4[6] = 4;
    expect(() => readNpy(v4, 'v.npy')).toThrow('v.npy: .npy format version 4 is not supported (1, 2 and 3 are)');
    v4[6] = 0;
    expect(() => readNpy(v4, 'v.npy')).toThrow('.npy format version 0 is not supported');
    expect(() => readNpy(npy('', new Uint8Array(0), 2).subarray(0, 11), 's.npy'))
      .toThrow('s.npy: the file is 11 bytes, too short for a .npy version 2 header length (12 bytes; truncated)');
    expect(() => readNpy(npy('', new Uint8Array(0), 2).subarray(0, 12), 's.npy')).toThrow('s.npy: malformed .npy header');
    const long = npy(dict('<f4', '(1,)'), new Uint8Array(0));
    expect(() => readNpy(long.subarray(0, long.length - 1), 'h.npy')).toThrow('h.npy: header runs past the end of the file (truncated)');
    expect(() => readNpy(long, 'h.npy')).toThrow('h.npy: shape (1,) needs 4 data bytes but the file has 0 (truncated)');
    for (const header of [`{'fortran_order': False, 'shape': (1,), }`, `{'descr': '<f4', 'shape': (1,), }`, `{'descr': '<f4', 'fortran_order': False, }`]) {
      expect(() => readNpy(npy(header, f4([1])), 'm.npy')).toThrow("m.npy: malformed .npy header (expected a dict with 'descr', 'fortran_order' and 'shape')");
    }
    expect(() => readNpy(npy(dict('<i4', '(1,)'), f4([1])), 'i.npy')).toThrow('i.npy: dtype <i4 is not supported; save the vector as float32 or float64');
    expect(() => readNpyArray(npy(dict('<f2', '(1,)'), f4([1])), 'i.npy')).toThrow('i.npy: dtype <f2 is not supported; save the array as float32 or float64');
    expect(() => readNpy(npy(dict('<f4', '(-1,)'), f4([1])), 'n.npy')).toThrow('n.npy: shape (-1,) is not a list of sizes');
    expect(() => readNpy(npy(dict('<f4', '(2, x)'), f4([1])), 'n.npy')).toThrow('n.npy: shape (2, NaN) is not a list of sizes');
    expect(() => readNpy(npy(dict('<f4', '()'), f4([1])), 'z.npy')).toThrow('z.npy: shape () is not one vector');
    expect(() => readNpy(npy(dict('<f4', '(3, 1)'), f4([1, 2, 3])), 'c.npy')).toThrow('c.npy: shape (3, 1) is not one vector');
    expect(() => readNpy(npy(dict('<f8', '(2,)'), f8([1])), 't.npy')).toThrow('t.npy: shape (2,) needs 16 data bytes but the file has 8 (truncated)');
  });

  it('headers as Python literals: any spacing, a descr without a byte-order mark, a size of two digits, empty dimensions', () => {
    expect(readNpy(npy(`{'descr':'<f4','fortran_order':False,'shape':(2,)}`, f4([1, 2])))).toEqual(Float32Array.from([1, 2]));
    expect(readNpy(npy(`{'descr'  :  '<f4',  'fortran_order' :  False, 'shape'  :  (2,) }`, f4([1, 2])))).toEqual(Float32Array.from([1, 2]));
    expect(readNpy(npy(dict('f4', '(2,)'), f4([5, 6])))).toEqual(Float32Array.from([5, 6]));
    expect(() => readNpy(npy(dict('<c16', '(1,)'), f8([1, 0])), 'c.npy')).toThrow('c.npy: dtype <c16 is not supported; save the vector as float32 or float64');
    expect(() => readNpy(npy(dict('<f', '(1,)'), f4([1])), 'c.npy')).toThrow('c.npy: dtype <f is not supported');
    expect(readNpyArray(npy(dict('<f4', '(0,)'), new Uint8Array(0)))).toEqual({ data: new Float32Array(0), shape: [0] });
    expect(readNpyArray(npy(dict('<f4', '(2, 0)'), new Uint8Array(0)))).toEqual({ data: new Float32Array(0), shape: [2, 0] });
    // the smallest version-1 file: 10 bytes, an empty header
    expect(() => readNpy(npy('', new Uint8Array(0), 1), 'e.npy')).toThrow('e.npy: malformed .npy header');
  });

  it('shape (1, 1, d) is not one vector; "(3, )" is (3,); an 8-byte file is not .npy; odd data offsets in any buffer position', () => {
    expect(() => readNpy(npy(dict('<f4', '(1, 1, 2)'), f4([1, 2])), 'c.npy')).toThrow('c.npy: shape (1, 1, 2) is not one vector');
    expect(readNpy(npy(dict('<f4', '(3, )'), f4([1, 2, 3])))).toEqual(Float32Array.from([1, 2, 3]));
    expect(() => readNpy(npy('', new Uint8Array(0), 1).subarray(0, 8), 'm.npy')).toThrow(/^m\.npy: not a \.npy file/);
    const odd = npy(`{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}`, f4([1.5, 2.5]));
    const d = odd.length - 8;
    for (let off = 0; off < 4; off++) {
      const buf = new Uint8Array(off + odd.length);
      buf.set(odd, off);
      expect(readNpy(buf.subarray(off)), `byteOffset ${off}, data at ${d}`).toEqual(Float32Array.from([1.5, 2.5]));
    }
  });

  it('readVectorFile names the file in every .npy message', () => {
    expect(() => readVectorFile('dir/x.npy', npy(dict('<i8', '(1,)'), f8([1])))).toThrow('dir/x.npy: dtype <i8 is not supported');
  });
});

describe('.safetensors by the format spec', () => {
  it('a [1, d] tensor, F16 and BF16 data, and no metadata: only the vector', () => {
    expect(readVectorFile('v.safetensors', st({ v: { dtype: 'F32', shape: [1, 2], data_offsets: [0, 8] } }, f4([1, -2])))).toStrictEqual({ vector: Float32Array.from([1, -2]) });
    const h = new Uint8Array([0x00, 0x3c, 0x00, 0xc0]); // F16 1, −2
    expect(readVectorFile('v.safetensors', st({ v: { dtype: 'F16', shape: [2], data_offsets: [0, 4] } }, h)).vector).toEqual(Float32Array.from([1, -2]));
    const bf = new Uint8Array([0x80, 0x3f, 0x40, 0xc0]); // BF16 1, −3
    expect(readVectorFile('v.safetensors', st({ v: { dtype: 'BF16', shape: [2], data_offsets: [0, 4] } }, bf)).vector).toEqual(Float32Array.from([1, -3]));
  });

  it('of several tensors the one named steering_vector; metadata keys become the file\'s provenance', () => {
    const bytes = st({
      __metadata__: { model: 'm', hook: 'blocks.0.hook_resid_post', d_model: '2', method: 'actadd', provenance: '{"method":"actadd","position":"mean"}' },
      other: { dtype: 'F32', shape: [1], data_offsets: [0, 4] },
      steering_vector: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
    }, f4([9, 1, 2]));
    expect(readVectorFile('v.safetensors', bytes)).toStrictEqual({
      vector: Float32Array.from([1, 2]), model: 'm', hook: 'blocks.0.hook_resid_post', dModel: 2, method: 'actadd', provenance: { method: 'actadd', position: 'mean' },
    });
  });

  it('a matrix, an integer tensor, provenance that is not JSON and a d_model that disagrees are refused', () => {
    expect(() => readVectorFile('m.safetensors', st({ w: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] } }, f4([1, 2, 3, 4]))))
      .toThrow('m.safetensors: tensor "w" has shape [2, 2]; a steering vector is [d] or [1, d]');
    expect(() => readVectorFile('m.safetensors', st({ w: { dtype: 'F32', shape: [1, 1, 2], data_offsets: [0, 8] } }, f4([1, 2]))))
      .toThrow('tensor "w" has shape [1, 1, 2]');
    expect(() => readVectorFile('i.safetensors', st({ w: { dtype: 'I32', shape: [2], data_offsets: [0, 8] } }, f4([1, 2]))))
      .toThrow('i.safetensors: tensor "w": dtype I32 cannot be read as float weights');
    expect(() => readVectorFile('p.safetensors', st({ __metadata__: { provenance: '{bad' }, w: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, f4([1]))))
      .toThrow('p.safetensors: __metadata__.provenance is not JSON');
    expect(() => readVectorFile('d.safetensors', st({ __metadata__: { d_model: '3' }, w: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, f4([1, 2]))))
      .toThrow('d.safetensors: metadata says d_model = 3 but the vector has 2 values');
  });

  it('the writer pads the header with spaces so the data starts 8-byte aligned, whatever the header length', () => {
    const seen = new Set<number>();
    for (let n = 1; n <= 8; n++) {
      const sv: SteeringVector = { vector: Float32Array.from([1, 2, 3]), hook: 'hook_embed', dModel: 3, modelId: 'm'.repeat(n), provenance: { method: 'file', position: 'last', positive: [], negative: [] } };
      const bytes = writeVectorFile('safetensors', sv);
      const hlen = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
      const header = new TextDecoder().decode(bytes.subarray(8, 8 + hlen));
      const json = header.trimEnd();
      seen.add(enc(json).length % 8);
      expect((8 + hlen) % 8).toBe(0);
      expect(hlen - enc(json).length).toBeLessThan(8);
      expect(header.slice(json.length)).toMatch(/^ *$/);
      expect(bytes.length).toBe(8 + hlen + 12);
      expect(new Float32Array(bytes.slice(8 + hlen).buffer)).toEqual(sv.vector);
      expect(JSON.parse(json).__metadata__).toEqual({ model: sv.modelId, hook: 'hook_embed', d_model: '3', method: 'file', provenance: JSON.stringify(sv.provenance) });
    }
    expect(seen.size).toBe(8); // every remainder of the unpadded length was exercised
  });
});

describe('.json vectors', () => {
  it('keys of the wrong type are left out rather than trusted', () => {
    const j = { vector: [1, 2], model: 3, hook: null, d_model: '2', method: 1, provenance: 'x' };
    expect(readVectorFile('v.json', enc(JSON.stringify(j)))).toStrictEqual({ vector: Float32Array.from([1, 2]) });
    expect(readVectorFile('v.json', enc(JSON.stringify({ vector: [1], provenance: null }))).provenance).toBeUndefined();
    expect(readVectorFile('v.json', enc(JSON.stringify({ vector: [1], model: 'm', hook: 'h', d_model: 1, method: 'caa', provenance: { a: 1 } }))))
      .toStrictEqual({ vector: Float32Array.from([1]), model: 'm', hook: 'h', dModel: 1, method: 'caa', provenance: { a: 1 } });
  });

  it('not JSON (with the position), not an object with a vector, or a bare array with a non-number', () => {
    expect(() => readVectorFile('b.json', enc('{"vector": [1]}\n}'))).toThrow(/^b\.json: not valid JSON \(line 2, column 1\)$/);
    expect(() => readVectorFile('b.json', enc(''))).toThrow(/^b\.json: not valid JSON \(it ends early\)$/);
    const shape = 'expected {"model", "hook", "d_model", "vector": [...]} or an array of numbers';
    for (const text of ['null', '"abc"', '{"values": [1]}', '{"vector": {"0": 1}}', '3']) expect(() => readVectorFile('o.json', enc(text))).toThrow(`o.json: ${shape}`);
    expect(() => readVectorFile('a.json', enc('[1, "2"]'))).toThrow('a.json[1] is "2", not a number');
    expect(() => readVectorFile('a.json', enc('{"vector": [1, true]}'))).toThrow('a.json: vector[1] is true, not a number');
  });

  it('the writer\'s JSON holds model, hook, d_model, method, vector and provenance', () => {
    const sv: SteeringVector = { vector: Float32Array.from([0.5, -1]), hook: 'blocks.0.hook_resid_post', dModel: 2, modelId: 'm', provenance: { method: 'actadd', position: 'mean', positive: ['a'], negative: ['b'], head: 1 } };
    expect(JSON.parse(new TextDecoder().decode(writeVectorFile('json', sv)))).toStrictEqual({
      model: 'm', hook: 'blocks.0.hook_resid_post', d_model: 2, method: 'actadd', vector: [0.5, -1], provenance: sv.provenance,
    });
  });
});
