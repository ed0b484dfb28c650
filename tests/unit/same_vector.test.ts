import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { LibraryVector, VectorRequest } from '../../workers/protocol';

/**
 * The vector library holds a vector once (trials pressed "Build vector" twice and got two identical
 * rows): a build or import that yields a vector the library holds already — same name, hook, model,
 * width, provenance and bit-identical values — adds nothing and says which row it is.
 */
const worker = vi.hoisted(() => ({ values: [] as number[], builds: 0 }));
vi.mock('../../app/actions/worker', () => {
  const w = {
    // Each build returns fresh arrays and a new time stamp, as the worker does.
    steeringVector: async (req: VectorRequest): Promise<LibraryVector> => {
      worker.builds++;
      return { vector: Float32Array.from(worker.values), dModel: worker.values.length, hook: req.hook, model: 'stories260K', createdAt: new Date(worker.builds * 1000).toISOString(), provenance: { method: req.method, position: 'last', positive: [...req.positive], negative: [...req.negative] } };
    },
  };
  return { worker: () => w, inOrder: (call: (x: typeof w) => Promise<unknown>) => call(w), messageOf: (e: unknown) => String(e) };
});

const { useStore } = await import('../../app/store');
const { buildVector } = await import('../../app/actions/vectors');
const { sameVectorIn } = await import('../../app/lib/same_vector');

const REQ: VectorRequest = { method: 'caa', hook: 'blocks.3.hook_resid_post', positive: ['Lily smiled.'], negative: ['Lily cried.'], position: 'last' };
const initial = useStore.getState();
beforeEach(() => {
  useStore.setState(initial, true);
  worker.values = [0.5, -1.25, 3, 1e-7];
});

describe('building the same vector twice', () => {
  it('keeps one row: the second build returns the first entry, not added', async () => {
    const first = await buildVector(REQ, 'CAA happy vs sad');
    const second = await buildVector(REQ, 'CAA happy vs sad');
    expect(first?.added).toBe(true);
    expect(second).toEqual({ entry: first!.entry, added: false });
    expect(useStore.getState().vectors).toHaveLength(1);
    expect(useStore.getState().sweepSettings.vectorId).toBe(first!.entry.id);
  });

  it('adds a second row when the values differ by one bit (another load), or the texts, hook or name differ', async () => {
    await buildVector(REQ, 'CAA happy vs sad');
    const bits = new Uint32Array(Float32Array.from(worker.values).buffer);
    bits[3] ^= 1;
    worker.values = Array.from(new Float32Array(bits.buffer));
    expect((await buildVector(REQ, 'CAA happy vs sad'))?.added).toBe(true);
    worker.values = [0.5, -1.25, 3, 1e-7];
    expect((await buildVector({ ...REQ, negative: ['Lily wept.'] }, 'CAA happy vs sad'))?.added).toBe(true);
    expect((await buildVector({ ...REQ, hook: 'blocks.2.hook_resid_post' }, 'CAA happy vs sad'))?.added).toBe(true);
    expect((await buildVector(REQ, 'CAA happy vs sad (2)'))?.added).toBe(true);
    expect(useStore.getState().vectors).toHaveLength(5);
  });
});

describe('sameVectorIn', () => {
  const v = (values: number[], createdAt = '2026-12-01T00:00:00.000Z'): LibraryVector & { name: string } => ({
    name: 'x.npy', vector: Float32Array.from(values), dModel: values.length, hook: null, model: null, createdAt, file: 'x.npy',
    provenance: { method: 'file', position: 'unknown', positive: [], negative: [] },
  });
  it('ignores when it was made; compares values bit for bit (0 and −0 differ)', () => {
    const lib = [v([1, 2]), v([0, 1])];
    expect(sameVectorIn(lib, v([1, 2], '2027-01-01T00:00:00.000Z'), 'x.npy')).toBe(lib[0]);
    expect(sameVectorIn(lib, v([-0, 1]), 'x.npy')).toBeUndefined();
    expect(sameVectorIn(lib, v([1, 2, 3]), 'x.npy')).toBeUndefined();
    expect(sameVectorIn(lib, v([1, 2]), 'y.npy')).toBeUndefined();
  });
});
