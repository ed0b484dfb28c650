import * as fs from 'node:fs';
import { afterAll } from 'vitest';
import { sharedPath } from './shared';

/**
 * The one walk over the golden fixtures (../shared/fixtures: nine dense families;
 * ../shared/fixtures-moe: three mixture-of-experts ones, the same layout plus router_logits) and the
 * helpers their reference tests share: each fixture's meta.json, the hooks that stand for HF's
 * hidden_states, and the table of largest differences printed after a file's tests.
 */

/** One fixture folder. */
export interface Fixture {
  /** 'fixtures' or 'fixtures-moe'. */
  root: 'fixtures' | 'fixtures-moe';
  /** The family as the folder names it ("llama", "qwen2_moe"). */
  arch: string;
  /** "fixtures/llama-tiny". */
  name: string;
  dir: string;
}

/** A reference sequence of meta.json. */
export interface FixtureSequence { name: string; input_ids: number[]; generated_ids: number[] }

/** What the tests read of reference/meta.json. */
export interface FixtureMeta { sequences: FixtureSequence[]; n_layers: number }

/** Every fixture folder (one with a config.json) of `roots`, sorted by name within each root. */
export function fixtures(roots: readonly Fixture['root'][] = ['fixtures', 'fixtures-moe']): Fixture[] {
  return roots.flatMap((root) => fs.readdirSync(sharedPath(root)).filter((d) => fs.existsSync(sharedPath(root, d, 'config.json'))).sort()
    .map((d) => ({ root, arch: d.replace(/-tiny$/, ''), name: `${root}/${d}`, dir: sharedPath(root, d) })));
}

/** The fixture's reference/meta.json. */
export function fixtureMeta(dir: string): FixtureMeta {
  return JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as FixtureMeta;
}

/** HF hidden_states[i] as engine hooks: embedding output, resid_post of blocks 0..L-2, final norm output. */
export function hiddenStateHooks(nLayers: number): string[] {
  return ['blocks.0.hook_resid_pre', ...Array.from({ length: nLayers - 1 }, (_, i) => `blocks.${i}.hook_resid_post`), 'ln_final.hook_normalized'];
}

/**
 * The largest difference measured per fixture and quantity: record(fixture, quantity, diff) keeps
 * the maximum and returns diff (for the assertion); the table prints after the file's tests.
 */
export function differenceTable(): (fixture: string, quantity: string, diff: number) => number {
  const measured = new Map<string, Record<string, number>>();
  afterAll(() => console.table(Object.fromEntries([...measured].map(([k, v]) => [k, Object.fromEntries(Object.entries(v).map(([q, d]) => [q, d.toExponential(2)]))]))));
  return (fixture, quantity, diff) => {
    const row = measured.get(fixture) ?? {};
    row[quantity] = Math.max(row[quantity] ?? 0, diff);
    measured.set(fixture, row);
    return diff;
  };
}
