import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { decodeTensor, parseSafetensors, SafetensorsError, type SafetensorsDtype } from '../../workers/engine/io/safetensors';
import { sharedPath } from '../shared';

/** Builds a safetensors file from a header object and a data section. */
function build(header: unknown, data: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

const real = new Uint8Array(fs.readFileSync(sharedPath('models', 'stories260K', 'model.safetensors')));

describe('safetensors reader validates before trusting a byte', () => {
  it('parses the real stories260K checkpoint: every tensor inside the file, F32', () => {
    const h = parseSafetensors(real);
    expect(h.tensors.get('model.embed_tokens.weight')!.shape).toEqual([512, 64]);
    for (const e of h.tensors.values()) expect(h.dataStart + e.end).toBeLessThanOrEqual(real.length);
  });

  it('rejects a truncated file, naming the tensor that runs past the end', () => {
    expect(() => parseSafetensors(real.subarray(0, real.length - 100))).toThrow(/past the end of the data/);
  });

  it('rejects a file shorter than the 8-byte length field', () => {
    expect(() => parseSafetensors(real.subarray(0, 5))).toThrow(SafetensorsError);
  });

  it('rejects a header length larger than the file', () => {
    const b = real.slice(0, 1000);
    expect(() => parseSafetensors(b)).toThrow(/header claims \d+ bytes .*truncated/);
  });

  it('rejects a header that is not JSON', () => {
    const b = build({}, new Uint8Array(0));
    b.fill(0x7b, 8); // '{{{{'
    expect(() => parseSafetensors(b)).toThrow(/header is not valid JSON \(line 1, column 2\)/);
  });

  it('rejects offsets whose span disagrees with shape × dtype', () => {
    const b = build({ a: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 12] } }, new Uint8Array(16));
    expect(() => parseSafetensors(b)).toThrow(/needs 16 bytes but data_offsets span 12/);
  });

  it('rejects overlapping tensors', () => {
    const b = build({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } }, new Uint8Array(12));
    expect(() => parseSafetensors(b)).toThrow(/overlap/);
  });

  it('accepts non-float buffers (Pythia BOOL masks) but refuses to decode them as weights', () => {
    const b = build({ a: { dtype: 'BOOL', shape: [2, 2], data_offsets: [0, 4] } }, new Uint8Array(4));
    expect(parseSafetensors(b).tensors.get('a')!.dtype).toBe('BOOL');
    expect(() => decodeTensor(new Uint8Array(4), 'BOOL')).toThrow(/BOOL.*F32, F16, BF16/);
    expect(() => parseSafetensors(build({ a: { dtype: 'Q4', shape: [1], data_offsets: [0, 1] } }, new Uint8Array(1)))).toThrow(/not a safetensors dtype/);
  });

  it('rejects negative or fractional shapes and malformed offsets', () => {
    expect(() => parseSafetensors(build({ a: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, new Uint8Array(4)))).toThrow(/shape/);
    expect(() => parseSafetensors(build({ a: { dtype: 'F32', shape: [1], data_offsets: [0] } }, new Uint8Array(4)))).toThrow(/data_offsets/);
  });

  it('decodes F16 and BF16 exactly to float32', () => {
    // 1.0, -2.0, 0.5 and the smallest F16 subnormal (2^-24)
    const f16 = new Uint8Array(new Uint16Array([0x3c00, 0xc000, 0x3800, 0x0001]).buffer);
    expect(Array.from(decodeTensor(f16, 'F16'))).toEqual([1, -2, 0.5, 2 ** -24]);
    const bf16 = new Uint8Array(new Uint16Array([0x3f80, 0xc000, 0x4049]).buffer);
    expect(Array.from(decodeTensor(bf16, 'BF16'))).toEqual([1, -2, 3.140625]);
  });

  it('decodes bytes at an odd offset (DataView) to the same values as aligned bytes (typed views), into a new array', () => {
    // values written bit by bit here: BF16 = the high half of the float32 word, F16 from the IEEE layout
    const f32 = Float32Array.of(1.5, -0.375, 3e38, -7e-39, 0);
    const bits = new Uint32Array(f32.buffer);
    const cases: [SafetensorsDtype, number, (dv: DataView, i: number) => void, number[]][] = [
      ['F32', 4, (dv, i) => dv.setFloat32(4 * i, f32[i], true), Array.from(f32)],
      ['BF16', 2, (dv, i) => dv.setUint16(2 * i, bits[i] >>> 16, true), Array.from(f32, (_, i) => new Float32Array(Uint32Array.of(bits[i] & 0xffff0000).buffer)[0])],
      ['F16', 2, (dv, i) => dv.setUint16(2 * i, [0x3e00, 0xb600, 0x7bff, 0x8001, 0][i], true), [1.5, -0.375, 65504, -(2 ** -24), 0]],
      ['F64', 8, (dv, i) => dv.setFloat64(8 * i, [0.1, -2, 1e-3, 5, 0][i], true), [0.1, -2, 1e-3, 5, 0].map(Math.fround)],
    ];
    for (const [dtype, size, put, want] of cases) {
      for (const offset of [0, 1, size]) {
        const file = new Uint8Array(offset + size * want.length);
        const dv = new DataView(file.buffer, offset);
        want.forEach((_, i) => put(dv, i));
        const raw = file.subarray(offset);
        const got = decodeTensor(raw, dtype);
        expect(Array.from(got), `${dtype} at offset ${offset}`).toEqual(want);
        expect(got.buffer).not.toBe(file.buffer);
      }
    }
  });
});
