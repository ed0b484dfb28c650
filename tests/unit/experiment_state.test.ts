import { describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { useStore, type AppState } from '../../app/store';
import { apply, capture, EXPERIMENT_KEYS, experimentJson, NOT_EXPERIMENT, type ExperimentKey } from '../../app/lib/experiment_state';
import { readExperiment } from '../../workers/shared';
import { EVERY_FIELD, SAE_ID, SAE_INFO, SAE_ORIGIN } from './experiment_fixture';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));

/**
 * The experiment is one object (lib/experiment_state.ts): `capture(store)` and `apply(store, e)`
 * are the only way between the store and a file, a link, local storage or poster mode. Every store
 * field is either part of the experiment or listed as not, with the reason; and the round trip
 * capture → JSON → read → apply puts every experiment field back exactly.
 * Planted checks (each made these tests fail, then reverted): a store field added to the display
 * slice without a listing; apply dropping the vectors' α; apply not attaching a feature
 * intervention to its loaded SAE (also fails tests/ui/experiment_restores.test.ts).
 */
const BUNDLED = ['stories260K'];
const fresh = useStore.getInitialState();
const dataKeys = (s: AppState) => (Object.keys(s) as (keyof AppState)[]).filter((k) => typeof s[k] !== 'function');

/** A store field with the store's ids replaced by places (vector ids by their library index; intervention ids dropped). */
function normal(s: Pick<AppState, ExperimentKey>, k: ExperimentKey): unknown {
  const vi = (id: string | null) => (id === null ? null : s.vectors.findIndex((v) => v.id === id));
  switch (k) {
    case 'vectors': return s.vectors.map(({ id: _id, vector, ...v }) => ({ ...v, vector: Array.from(vector) }));
    case 'interventions': return s.interventions.map(({ id: _id, vectorId, saePending: _p, ...d }) => ({ ...d, vector: vi(vectorId) }));
    case 'sweepSettings': return { ...s.sweepSettings, vectorId: vi(s.sweepSettings.vectorId) };
    default: return s[k];
  }
}

describe('the experiment: one capture and one apply over every field of the store', () => {
  it('every store field is part of the experiment or named as not (with the reason); none is both', () => {
    const keys = dataKeys(useStore.getState());
    const captured = new Set<string>(EXPERIMENT_KEYS);
    const unlisted = keys.filter((k) => !captured.has(k) && !(k in NOT_EXPERIMENT));
    expect(unlisted, 'store fields in neither EXPERIMENT_KEYS nor NOT_EXPERIMENT: add each to the schema (and capture/apply) or say why it is not part of an experiment').toEqual([]);
    expect(EXPERIMENT_KEYS.filter((k) => k in NOT_EXPERIMENT)).toEqual([]);
    expect(Object.keys(NOT_EXPERIMENT).filter((k) => !keys.includes(k as keyof AppState)), 'NOT_EXPERIMENT names fields the store no longer has').toEqual([]);
    for (const [k, why] of Object.entries(NOT_EXPERIMENT)) expect(why?.length, k).toBeGreaterThan(10);
  });

  it('the fixture sets every experiment field away from its default (so the round trip below checks each one)', () => {
    for (const k of EXPERIMENT_KEYS) expect(JSON.stringify(normal(EVERY_FIELD, k)), k).not.toBe(JSON.stringify(normal(fresh, k)));
  });

  it('capture → file JSON → read → apply → capture: every experiment field comes back exactly, in one store update', () => {
    useStore.setState({ ...fresh, ...EVERY_FIELD });
    const e = capture(useStore.getState(), BUNDLED);
    const read = readExperiment(experimentJson(e));
    expect(read).toEqual(e);
    // a fresh store on the same model (and model B) with the same SAE loaded (what ensureModel, ensureModelB and restoreSaes give)
    useStore.setState({ ...fresh, lastLoad: EVERY_FIELD.lastLoad, modelB: EVERY_FIELD.modelB, saes: [SAE_INFO], saeOrigins: { [SAE_ID]: SAE_ORIGIN } });
    let updates = 0;
    const stop = useStore.subscribe(() => { updates++; });
    const out = apply(useStore, read);
    stop();
    expect(updates).toBe(1);
    expect(out).toEqual({ missing: [], pendingSaes: [] });
    const after = useStore.getState();
    for (const k of EXPERIMENT_KEYS) expect(normal(after, k), k).toEqual(normal(EVERY_FIELD, k));
    expect(capture(after, BUNDLED)).toEqual(e);
  });

  it('a feature intervention whose SAE is not loaded is switched off but keeps naming its SAE, so a capture before it loads loses nothing', () => {
    useStore.setState({ ...fresh, ...EVERY_FIELD });
    const e = capture(useStore.getState(), BUNDLED);
    useStore.setState({ ...fresh, lastLoad: EVERY_FIELD.lastLoad });
    expect(apply(useStore, e).pendingSaes).toEqual([0]);
    const s = useStore.getState();
    expect(s.interventions.filter((d) => d.saePending).map((d) => d.enabled)).toEqual([false, false]);
    const again = capture(s, BUNDLED);
    expect(again.saes).toEqual(e.saes);
    expect(again.interventions.map((d) => d.sae)).toEqual(e.interventions.map((d) => d.sae));
  });
});

describe('old experiment files still open (format version 3 added the vectors’ α and file; enableThinking is optional)', () => {
  for (const v of [1, 2]) {
    it(`a version ${v} file opens, its vectors at α 1 (absent)`, () => {
      const e = readExperiment(readFileSync(`tests/unit/fixtures/experiment_v${v}.json`, 'utf8'));
      expect(e.version).toBe(v);
      useStore.setState({ ...fresh, enableThinking: false });
      const out = apply(useStore, e);
      expect(out.missing).toEqual([]);
      const s = useStore.getState();
      expect(s.prompt).toBe('The little girl felt very');
      expect(s.enableThinking, 'a file without enableThinking renders as before: the variable not passed').toBeUndefined();
      expect(s.vectors.map((x) => x.alpha)).toEqual([undefined]);
      expect(s.interventions[0]).toMatchObject({ type: 'add', dose: 6, vectorId: s.vectors[0].id, enabled: true });
      expect(capture(s, BUNDLED).version).toBe(3);
    });
  }

  it('a version 3 file carries each vector’s α and file, and they come back (the library shows α = 6, not 1)', () => {
    useStore.setState({ ...fresh, ...EVERY_FIELD });
    const text = experimentJson(capture(useStore.getState(), BUNDLED));
    expect(JSON.parse(text).vectors.map((v: { alpha?: number; file?: string }) => [v.alpha, v.file])).toEqual([[6, undefined], [-2.5, 'girl.npy']]);
    useStore.setState({ ...fresh });
    apply(useStore, readExperiment(text));
    expect(useStore.getState().vectors.map((v) => v.alpha)).toEqual([6, -2.5]);
  });
});
