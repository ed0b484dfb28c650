import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { LibraryVector } from '../../workers/protocol';
import { adoptVectors } from '../lib/pick_vector';

/** A vector in the library: the worker's LibraryVector with an id and a name. */
export interface LibraryEntry extends LibraryVector {
  id: string;
  name: string;
  /**
   * α that Apply and a heatmap cell place it with: its set's suggested α when built by CAA from a
   * set that has one (happy/sad: 6), then as last set in its library row; absent = 1.
   */
  alpha?: number;
}

/** A contrastive set as edited in the library panel (public/steering/*.json layout). */
export interface ContrastSet {
  name: string;
  positive: string[];
  negative: string[];
  /** A prompt and futures the set was written for, and the α its CAA vector steers them with. */
  suggested: { prompt: string; good: string; bad: string; alpha?: number } | null;
}

/** The vectors slice: steering vectors built or imported this session, and the contrastive set being edited. */
export interface VectorsSlice {
  vectors: LibraryEntry[];
  /** null until the default set has been fetched. */
  contrastSet: ContrastSet | null;
  /** Adds a vector; interventions that take a vector but have none yet start with it where it fits (lib/pick_vector.ts adoptVectors). */
  addVector(v: LibraryVector, name: string, alpha?: number): LibraryEntry;
  removeVector(id: string): void;
  /** Sets the α a vector is applied with (LibraryEntry.alpha). */
  setVectorAlpha(id: string, alpha: number): void;
  setContrastSet(set: ContrastSet | null): void;
}

let nextId = 1;

/** A fresh library id (lib/experiment_state.ts apply takes them for a restored library). */
export function newVectorId(): string {
  return `v${nextId++}`;
}

export const createVectorsSlice: StateCreator<AppState, [], [], VectorsSlice> = (set) => ({
  vectors: [],
  contrastSet: null,
  addVector: (v, name, alpha) => {
    const entry: LibraryEntry = { ...v, id: newVectorId(), name, ...(alpha !== undefined ? { alpha } : {}) };
    // an intervention added before any vector existed follows the library (lib/pick_vector.ts)
    set((s) => {
      const vectors = [...s.vectors, entry];
      return { vectors, interventions: adoptVectors(s.interventions, vectors, s.info) };
    });
    return entry;
  },
  removeVector: (id) => set((s) => ({ vectors: s.vectors.filter((v) => v.id !== id) })),
  setVectorAlpha: (id, alpha) => set((s) => ({ vectors: s.vectors.map((v) => (v.id === id ? { ...v, alpha } : v)) })),
  setContrastSet: (contrastSet) => set({ contrastSet }),
});
