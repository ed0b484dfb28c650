import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { LibraryVector } from '../../workers/protocol';
import { adoptVectors } from '../lib/pick_vector';

/** A vector in the library: the worker's LibraryVector with an id and a name. */
export interface LibraryEntry extends LibraryVector {
  id: string;
  name: string;
}

/** A contrastive set as edited in the library panel (public/steering/*.json layout). */
export interface ContrastSet {
  name: string;
  positive: string[];
  negative: string[];
  /** A prompt and futures the set was written for. */
  suggested: { prompt: string; good: string; bad: string } | null;
}

/** The vectors slice: steering vectors built or imported this session, and the contrastive set being edited. */
export interface VectorsSlice {
  vectors: LibraryEntry[];
  /** null until the default set has been fetched. */
  contrastSet: ContrastSet | null;
  /** Adds a vector; interventions that take a vector but have none yet start with it where it fits (lib/pick_vector.ts adoptVectors). */
  addVector(v: LibraryVector, name: string): LibraryEntry;
  removeVector(id: string): void;
  setContrastSet(set: ContrastSet | null): void;
}

let nextId = 1;

export const createVectorsSlice: StateCreator<AppState, [], [], VectorsSlice> = (set) => ({
  vectors: [],
  contrastSet: null,
  addVector: (v, name) => {
    const entry: LibraryEntry = { ...v, id: `v${nextId++}`, name };
    // an intervention added before any vector existed follows the library (lib/pick_vector.ts)
    set((s) => {
      const vectors = [...s.vectors, entry];
      return { vectors, interventions: adoptVectors(s.interventions, vectors, s.info) };
    });
    return entry;
  },
  removeVector: (id) => set((s) => ({ vectors: s.vectors.filter((v) => v.id !== id) })),
  setContrastSet: (contrastSet) => set({ contrastSet }),
});
