import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadTransformer } from '../../workers/engine/model/load';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { assertVectorFits, readNpy, readVectorFile, writeNpy, writeVectorFile } from '../../workers/engine/steering/vector_io';
import type { SteeringVector } from '../../workers/engine/steering/vector';
import { readReference, sharedPath } from '../shared';

/**
 * Vector files: .npy bytes written by NumPy 2.4 (np.save, embedded below as base64) as the
 * independent reference for the reader and the writer; round trips of all three formats.
 */
const b64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));
/** np.save(np.array([0.5, -1.25, 3e-3, 7.0], dtype='<f4')) */
const NPY_F4 = 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDQsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAA/AACgv6abRDsAAOBA';
/** np.save(np.array([[0.1, -2.5, 1e-8]], dtype='<f8')) */
const NPY_F8_1xD = 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY4JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDEsIDMpLCB9ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAqamZmZmZm5PwAAAAAAAATAOoww4o55RT4=';
/** np.save(np.array([1.5, -0.375], dtype='>f4')) */
const NPY_BE = 'k05VTVBZAQB2AHsnZGVzY3InOiAnPmY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo/wAAAvsAAAA==';
/** np.save(np.array([1.0], dtype='<f2')) */
const NPY_F2 = 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGYyJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDEsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAPA==';
/** np.save(np.zeros((2, 3), dtype='<f4')) */
const NPY_2D = 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsIDMpLCB9ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

const sample: SteeringVector = {
  vector: Float32Array.from([0.5, -1.25, 3e-3, 7, Math.PI, -1e-30, 123456.789, 0]),
  hook: 'blocks.3.hook_resid_post', dModel: 8, modelId: 'stories260K (test)',
  provenance: { method: 'caa', position: 'last', positive: ['a happy text ✓'], negative: ['a sad text'] },
};

describe('.npy', () => {
  it('reads NumPy-written float32, float64 (1, d) and big-endian files', () => {
    expect(readNpy(b64(NPY_F4))).toEqual(Float32Array.from([0.5, -1.25, 3e-3, 7]));
    expect(readNpy(b64(NPY_F8_1xD))).toEqual(Float32Array.from([0.1, -2.5, 1e-8]));
    expect(readNpy(b64(NPY_BE))).toEqual(Float32Array.from([1.5, -0.375]));
  });

  it('writes the same bytes as np.save for a float32 vector', () => {
    expect(writeNpy(Float32Array.from([0.5, -1.25, 3e-3, 7]))).toEqual(b64(NPY_F4));
  });

  it('rejects float16, 2-D arrays, truncated data and non-npy bytes with the reason', () => {
    expect(() => readNpy(b64(NPY_F2), 'h.npy')).toThrow('h.npy: dtype <f2 is not supported; save the vector as float32 or float64');
    expect(() => readNpy(b64(NPY_2D), 'm.npy')).toThrow('m.npy: shape (2, 3) is not one vector; a steering vector file holds shape (d,) or (1, d)');
    expect(() => readNpy(b64(NPY_F4).subarray(0, 135), 't.npy')).toThrow('t.npy: shape (4,) needs 16 data bytes but the file has 7 (truncated)');
    expect(() => readNpy(new TextEncoder().encode('{"vector": [1]}'), 'x.npy')).toThrow('x.npy: not a .npy file');
  });
});

describe('round trips', () => {
  it.each(['npy', 'safetensors', 'json'] as const)('%s: values bit-exact, and metadata kept where the format has it', (format) => {
    const back = readVectorFile(`v.${format}`, writeVectorFile(format, sample));
    expect(back.vector).toEqual(sample.vector);
    if (format !== 'npy') {
      expect(back).toMatchObject({ model: sample.modelId, hook: sample.hook, dModel: 8, method: 'caa', provenance: sample.provenance });
    }
  });

  it('reads the steering_vector of a fixture reference file written by another safetensors implementation', () => {
    const file = sharedPath('fixtures', 'llama-tiny', 'reference', 'steer_seq0.safetensors');
    const bytes = new Uint8Array(fs.readFileSync(file));
    expect(readVectorFile('steer_seq0.safetensors', bytes).vector).toEqual(readReference(file).get('steering_vector')!.data);
  });

  it('JSON: a bare array of numbers is a vector too', () => {
    expect(readVectorFile('v.json', new TextEncoder().encode('[1, -2.5, 0]')).vector).toEqual(Float32Array.from([1, -2.5, 0]));
  });
});

describe('bad vector files', () => {
  it('NaN and Infinity are reported with their index', () => {
    const v = { ...sample, vector: Float32Array.from([1, 2, 3, NaN]) };
    expect(() => readVectorFile('nan.npy', writeVectorFile('npy', v))).toThrow('nan.npy[3] is NaN: steering vectors must be finite');
    const inf = { ...sample, vector: Float32Array.from([1, -Infinity]) };
    expect(() => readVectorFile('inf.safetensors', writeVectorFile('safetensors', inf))).toThrow('inf.safetensors[1] is -Infinity');
    expect(() => readVectorFile('null.json', new TextEncoder().encode('{"vector":[0.5,null]}'))).toThrow('null.json: vector[1] is null, not a number (NaN or Infinity written as JSON null?)');
  });

  it('a metadata d_model that disagrees with the data, an unknown extension, and a file of several tensors are refused', () => {
    expect(() => readVectorFile('d.json', new TextEncoder().encode('{"d_model": 64, "vector": [1, 2]}'))).toThrow('d.json: metadata says d_model = 64 but the vector has 2 values');
    expect(() => readVectorFile('v.pt', new Uint8Array(4))).toThrow('v.pt: unknown vector file type; use .npy, .safetensors or .json');
    const seq = new Uint8Array(fs.readFileSync(sharedPath('fixtures', 'llama-tiny', 'reference', 'seq0.safetensors')));
    expect(() => readVectorFile('seq0.safetensors', seq)).toThrow(/seq0.safetensors: holds 5 tensors .*; a vector file holds one, or one named "steering_vector"/);
  });

  it('a vector of the wrong width for the hook says expected vs got and the hook width', async () => {
    const { model } = await loadTransformer(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
    expect(() => assertVectorFits(new Float32Array(32), model.spec, 'blocks.1.hook_resid_post', 'v.npy'))
      .toThrow('v.npy holds a vector of 32 values, but blocks.1.hook_resid_post is [pos, d_model] = 64 wide in this model (expected 64, got 32)');
    expect(() => assertVectorFits(new Float32Array(64), model.spec, 'blocks.1.mlp.hook_post', 'v.npy')).toThrow('blocks.1.mlp.hook_post is [pos, d_mlp] = 172 wide');
    expect(() => assertVectorFits(new Float32Array(64), model.spec, 'blocks.0.attn.hook_z', 'v.npy', 2)).toThrow('one head of blocks.0.attn.hook_z is d_head = 8 wide in this model (expected 8, got 64)');
    expect(() => assertVectorFits(new Float32Array(64), model.spec, 'blocks.0.hook_resid_post', 'v.npy')).not.toThrow();
  });
});
