import { describe, expect, it } from 'vitest';
import LZString from 'lz-string';
import { ExperimentError, experimentSpecs, parseExperiment, readExperiment } from '../../workers/engine/experiment';
import { experimentFromHash, experimentHash, MAX_HASH_CHARS, modelBOf } from '../../app/lib/experiment_state';

const base = {
  format: 'branchpoint-experiment', version: 1, model: { kind: 'bundled', name: 'stories260K' },
  prompt: 'The little girl felt very', good: { mode: 'text', value: ' happy' }, bad: { mode: 'text', value: ' sad' },
};
const vec = (n: number, values: number[] | null) => ({ name: `v${n}`, hook: 'blocks.3.hook_resid_post', model: 'stories260K', dModel: values?.length ?? 64, provenance: { method: 'caa', position: 'last', positive: [], negative: [] }, values });

function kindOf(f: () => unknown): string {
  try { f(); } catch (e) { return e instanceof ExperimentError ? `${e.kind}: ${e.message}` : `other: ${(e as Error).message}`; }
  return 'ok';
}

describe('experiment file (docs/experiment-format.md)', () => {
  it('fills the documented defaults', () => {
    const e = parseExperiment(base);
    expect(e.generation).toEqual({ maxNewTokens: 32, temperature: 0, topK: 0, seed: 0 });
    expect(e.interventions).toEqual([]);
    expect(e.view.name).toBe('margins');
  });

  it('refuses a newer version by number, and names each invalid field', () => {
    expect(kindOf(() => parseExperiment({ ...base, version: 7 }))).toMatch(/^version: .*format version 7; this app reads version 3/);
    expect(kindOf(() => readExperiment('{"format": "branchpoint-experiment", '))).toMatch(/^corrupt: /);
    expect(kindOf(() => parseExperiment({ ...base, interventions: [{ hook: 'blocks.1.hook_resid_post', type: 'shove' }] }))).toMatch(/^invalid: .*interventions\[0\]\.type/);
    expect(kindOf(() => parseExperiment({ ...base, interventions: [{ hook: 'blocks.1.hook_resid_post', type: 'add', vector: 2 }] }))).toMatch(/interventions\[0\]\.vector: refers to vector 2 but the file has 0/);
    expect(kindOf(() => parseExperiment({ ...base, vectors: [{ ...vec(0, [1, 2]), dModel: 3 }] }))).toMatch(/values must have dModel entries/);
    expect(kindOf(() => parseExperiment({ ...base, format: 'something-else' }))).toMatch(/^invalid: not a Branchpoint experiment/);
  });

  it('version 2 carries the activations hook and the token selection; a version 1 file still reads, without them', () => {
    const v2 = parseExperiment({ ...base, version: 2, view: { name: 'activations', hook: 'blocks.2.attn.hook_z', selection: { start: 3, end: 7 } } });
    expect(v2.view.hook).toBe('blocks.2.attn.hook_z');
    expect(v2.view.selection).toEqual({ start: 3, end: 7 });
    expect(experimentFromHash(experimentHash(v2).hash)?.view).toEqual(v2.view);
    const v1 = parseExperiment(base);
    expect(v1.version).toBe(1);
    expect(v1.view.selection).toBeNull();
    expect(v1.view.hook).toBeUndefined();
    expect(kindOf(() => parseExperiment({ ...base, version: 2, view: { selection: { start: 4, end: 4 } } }))).toMatch(/^invalid: .*view\.selection.*end must be greater than start/);
    expect(kindOf(() => parseExperiment({ ...base, version: 0 }))).toMatch(/^invalid: .*version/);
  });

  it('carries SAE feature interventions with where their SAE came from, and the runner says it cannot run them', () => {
    const saes = [{ source: { kind: 'hub', repo: 'org/saes', path: 'layer_2/relu' }, hook: 'blocks.2.hook_resid_post' }, { source: { kind: 'local', name: 'mine (local folder)' } }];
    const e = parseExperiment({ ...base, version: 2, saes, interventions: [{ hook: 'blocks.2.hook_resid_post', type: 'sae_clamp', dose: 3, sae: { index: 0, feature: 17 } }] });
    expect(e.saes[0].source).toEqual({ kind: 'hub', repo: 'org/saes', path: 'layer_2/relu', revision: 'main' });
    expect(e.saes[1].source).toEqual({ kind: 'local', name: 'mine (local folder)' });
    expect(e.interventions[0].sae).toEqual({ index: 0, feature: 17 });
    expect(experimentFromHash(experimentHash(e).hash)).toEqual(e);
    expect(() => experimentSpecs(e)).toThrow(/intervention #1: clamps feature 17 of the SAE at org\/saes\/layer_2\/relu; the runner does not load SAEs/);
    expect(kindOf(() => parseExperiment({ ...base, version: 2, interventions: [{ hook: 'blocks.2.hook_resid_post', type: 'add', sae: { index: 1, feature: 0 } }] }))).toMatch(/interventions\[0\]\.sae: refers to SAE 1 but the file has 0/);
    expect(parseExperiment(base).saes).toEqual([]);
    expect(parseExperiment(base).interventions).toEqual([]);
  });

  it('turns interventions into engine specs with the vector inline, and says which vector a link left out', () => {
    const e = parseExperiment({ ...base, vectors: [vec(0, [0.5, -1])], interventions: [{ hook: 'blocks.3.hook_resid_post', type: 'add', dose: 4, vector: 0 }, { hook: 'blocks.1.hook_resid_post', type: 'ablate', enabled: false }] });
    expect(experimentSpecs(e)).toEqual([{ hook: 'blocks.3.hook_resid_post', type: 'add', alpha: 4, positions: 'all', vector: [0.5, -1] }]);
    const light = parseExperiment({ ...base, vectors: [vec(0, null)], interventions: [{ hook: 'blocks.3.hook_resid_post', type: 'add', dose: 4, vector: 0 }] });
    expect(() => experimentSpecs(light)).toThrow(/vector "v0" is not in this experiment/);
  });

  it('a link round-trips; past the length limit it drops vector values and names them', () => {
    const small = parseExperiment({ ...base, vectors: [vec(0, Array.from({ length: 64 }, (_, i) => Math.fround(Math.sin(i))))] });
    const { hash, missing } = experimentHash(small);
    expect(missing).toEqual([]);
    expect(experimentFromHash(hash)).toEqual(small);
    const big = parseExperiment({ ...base, vectors: [vec(0, Array.from({ length: 4096 }, (_, i) => Math.fround(Math.sin(i * 1.37))))] });
    const b = experimentHash(big);
    expect(b.hash.length).toBeLessThanOrEqual(MAX_HASH_CHARS);
    expect(b.missing).toEqual(['v0']);
    expect(experimentFromHash(b.hash)?.vectors[0].values).toBeNull();
    expect(kindOf(() => experimentFromHash('#x=%%%not-lz'))).toMatch(/^corrupt: the link is damaged/);
    expect(experimentFromHash('#somewhere-else')).toBeNull();
    expect(LZString.decompressFromEncodedURIComponent(hash.slice(3))).toContain('"branchpoint-experiment"');
  });

  it('version 3 carries model B (the Compare view) through a file and a link; version 1 and 2 files read without one', () => {
    const v3 = parseExperiment({ ...base, version: 3, modelB: { kind: 'bundled', name: 'stories260K-happy-ft' }, view: { name: 'compare' } });
    expect(v3.modelB).toEqual({ kind: 'bundled', name: 'stories260K-happy-ft' });
    expect(experimentFromHash(experimentHash(v3).hash)?.modelB).toEqual({ kind: 'bundled', name: 'stories260K-happy-ft' });
    expect(parseExperiment({ ...base, version: 2 }).modelB).toBeUndefined();
    expect(parseExperiment(base).modelB).toBeUndefined();
    expect(kindOf(() => parseExperiment({ ...base, version: 3, modelB: { kind: 'bundled', name: '' } }))).toMatch(/^invalid: .*modelB\.name/);
    // the app writes it from the source model B was loaded from (a Hub token never)
    expect(modelBOf({ modelB: null }, ['stories260K'])).toEqual({});
    const b = { label: 'x', options: {}, status: 'ready' as const, info: null, progress: null };
    expect(modelBOf({ modelB: { ...b, source: { kind: 'url', url: 'http://h/models/stories260K-happy-ft/', label: 'stories260K-happy-ft' } } }, ['stories260K', 'stories260K-happy-ft'])).toEqual({ modelB: { kind: 'bundled', name: 'stories260K-happy-ft' } });
    expect(modelBOf({ modelB: { ...b, source: { kind: 'hub', repo: 'o/n', revision: 'main', token: 'hf_secret' } } }, [])).toEqual({ modelB: { kind: 'hub', repo: 'o/n', revision: 'main' } });
  });
});
