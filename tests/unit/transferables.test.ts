import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { Analysis } from '../../workers/engine/api';
import { transferables } from '../../workers/job';
import { realModel } from '../reference_math';

/**
 * workers/job.ts transferables(): the worker hands over every typed array of a result by walking
 * it, so a new field of a result type is transferred without a hand-kept list.
 */
describe('transferables of a result', () => {
  it('collects the buffer of every typed array in objects, arrays, Maps and Sets, each buffer once', () => {
    const shared = new Float32Array(8);
    const a = new Int32Array(3), b = new Float64Array(2), c = new Uint8Array(4), d = new Float32Array(5);
    const r = { a, nested: { list: [b, { c }], again: shared, view: shared.subarray(2, 4) }, m: new Map([['k', d]]), s: new Set([shared]), n: 3, t: 'x', z: null };
    const got = transferables(r);
    expect(got).toHaveLength(5);
    expect(new Set(got)).toEqual(new Set([a.buffer, b.buffer, c.buffer, d.buffer, shared.buffer]));
    expect(transferables(c)).toEqual([c.buffer]);
  });

  it('leaves out SharedArrayBuffers, empty or detached buffers and primitives; survives a cycle', () => {
    const sab = new Float32Array(new SharedArrayBuffer(16));
    const detached = new Float32Array(4);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    const loop: Record<string, unknown> = { x: new Float32Array(0), sab, detached };
    loop.self = loop;
    expect(transferables(loop)).toEqual([]);
    expect(transferables(42)).toEqual([]);
    expect(transferables(undefined)).toEqual([]);
  });
});

describe('Engine.analyse on stories260K: what the worker transfers', () => {
  const m = realModel('stories260K');
  const A = m.ref.prompts[0];
  let e: Engine;
  beforeAll(async () => {
    e = await Engine.load(new NodeFiles(m.dir), new CpuBackend());
  }, 120_000);
  afterAll(() => e.dispose());

  it('all 12 typed arrays of an Analysis are transferred, each its own buffer', async () => {
    const a: Analysis = await e.analyse({ prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] } });
    const arrays = [a.lensMargin, a.finalMargin, a.residNorms, a.massive.value, a.massive.token, a.massive.dim, a.massive.ratio,
      a.sinks.alpha0, a.sinks.alpha, a.sinks.sinkRate, a.sinks.sinkPos, a.sinks.sinkValueNorm];
    const got = transferables(a);
    expect(got).toHaveLength(12);
    expect(new Set(got)).toEqual(new Set(arrays.map((x) => x.buffer)));
  });
});
