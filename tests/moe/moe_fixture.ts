import * as fs from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { Transformer } from '../../workers/engine/model/transformer';
import { sharedPath } from '../shared';
import { runCaptured } from '../model_run';

/** The MoE fixtures of ../shared/fixtures-moe (README there). */
export type MoeArch = 'mixtral' | 'qwen2_moe' | 'olmoe';

/** One MoE fixture loaded for a describe block (moeFixture); the fields set in beforeAll are read inside tests and hooks. */
export interface MoeFixture {
  /** ../shared/fixtures-moe/<arch>-tiny. */
  dir: string;
  /** The CPU backend the fixture is loaded on, freed after the block. */
  b: CpuBackend;
  /** The first reference sequence's input ids (reference/meta.json) and their count. */
  ids: number[];
  S: number;
  engine: Engine;
  /** engine.model. */
  model: Transformer;
  /** The last layer (sparse in all three fixtures), the experts per sparse layer, top-k, d_model. */
  L: number;
  E: number;
  k: number;
  d: number;
  /** A plain forward of `ids` capturing the hooks `capture` named (only when moeFixture was given `capture`). */
  base: Awaited<ReturnType<typeof runCaptured>>;
}

/**
 * Loads ../shared/fixtures-moe/<arch>-tiny as an Engine on a CPU backend in a beforeAll of the
 * describe block that calls it, and frees the backend in its afterAll; with `capture`, also runs one
 * plain forward of the first reference sequence keeping the hooks it names (given the last layer L
 * and the expert count E) as `base`. Call it in the describe block's body, before hooks that read it.
 */
export function moeFixture(arch: MoeArch, capture?: (L: number, E: number) => string[]): MoeFixture {
  const dir = sharedPath('fixtures-moe', `${arch}-tiny`);
  const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { input_ids: number[] }[] };
  const ids = meta.sequences[0].input_ids;
  const f = { dir, b: new CpuBackend(), ids, S: ids.length } as MoeFixture;
  beforeAll(async () => {
    f.engine = await Engine.load(new NodeFiles(dir), f.b);
    f.model = f.engine.model;
    f.L = f.model.spec.nLayers - 1;
    ({ nExperts: f.E, topK: f.k } = f.model.spec.moe!);
    f.d = f.model.spec.dModel;
    if (capture) f.base = await runCaptured(f.b, f.model, ids, capture(f.L, f.E));
  });
  afterAll(() => f.b.dispose());
  return f;
}
