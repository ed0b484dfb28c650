/**
 * A steering vector as data: the values, the hook it belongs to and how it was made. Built by
 * studies/vectors.ts (ActAdd, CAA), read and written by vector_io.ts.
 */
/** Where the provenance of a vector is recorded (exported with it by vector_io.ts). */
export interface VectorProvenance {
  method: 'actadd' | 'caa' | 'file';
  /** 'last', 'mean' (ActAdd aligned mean) or 'marker:<string>' (CAA marked answer token). */
  position: string;
  positive: string[];
  negative: string[];
  head?: number;
}

/** A steering vector and what it belongs to. */
export interface SteeringVector {
  /** [dModel] float32. */
  vector: Float32Array;
  /** Hook it was read at (and is meant to be added at). */
  hook: string;
  /** Length of `vector`: the hook's row width (d_model for residual hooks; d_head for one head). */
  dModel: number;
  /** Engine label of the model it was computed on. */
  modelId: string;
  provenance: VectorProvenance;
}
