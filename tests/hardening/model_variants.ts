/**
 * Variants of a real model folder built in memory for bad-input tests: stories260K's files with a
 * config key, a tensor or a tokenizer field changed. Nothing is written to disk or to ../shared.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { decodeTensor, parseSafetensors } from '../../workers/engine/io/safetensors';
import { encodeSafetensors, type TensorToWrite } from '../../tools/safetensors_write';
import { fileURLToPath } from 'node:url';

/** ../shared (or $BRANCHPOINT_SHARED), found through import.meta.url so Playwright's ESM loader can import this too. */
const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? fileURLToPath(new URL('../../../shared', import.meta.url)));
const sharedPath = (...p: string[]): string => {
  if (!fs.existsSync(path.join(SHARED, 'models'))) throw new Error(`golden data not found at ${SHARED}: set BRANCHPOINT_SHARED to the shared/ folder`);
  return path.join(SHARED, ...p);
};

export type FileMap = Map<string, Uint8Array>;

const cache = new Map<string, FileMap>();

/** Every top-level file of ../shared/models/<name> (config, tokenizer, weights), read once. */
export function modelFiles(name = 'stories260K'): FileMap {
  let m = cache.get(name);
  if (!m) {
    const dir = sharedPath('models', name);
    m = new Map(fs.readdirSync(dir).filter((f) => fs.statSync(path.join(dir, f)).isFile()).map((f) => [f, new Uint8Array(fs.readFileSync(path.join(dir, f)))]));
    cache.set(name, m);
  }
  return new Map(m);
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export const json = (files: FileMap, file: string): Record<string, unknown> => JSON.parse(dec.decode(files.get(file)!)) as Record<string, unknown>;
export const putJson = (files: FileMap, file: string, value: unknown): FileMap => files.set(file, enc.encode(JSON.stringify(value)));
export const putText = (files: FileMap, file: string, text: string): FileMap => files.set(file, enc.encode(text));

/** A copy of the files with config.json edited. */
export function withConfig(edit: (c: Record<string, unknown>) => void, files = modelFiles()): FileMap {
  const c = json(files, 'config.json');
  edit(c);
  return putJson(files, 'config.json', c);
}

/** The tensors of model.safetensors as float32 TensorToWrite entries (header order). */
export function tensorsOf(files: FileMap, file = 'model.safetensors'): TensorToWrite[] {
  const bytes = files.get(file)!;
  const h = parseSafetensors(bytes, file);
  return [...h.tensors.values()].map((e) => ({ name: e.name, shape: e.shape, dtype: 'F32' as const, data: decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype) }));
}

/** A copy of the files with model.safetensors' tensors edited (re-encoded as F32 unless an entry says otherwise). */
export function withTensors(edit: (t: TensorToWrite[]) => TensorToWrite[] | void, files = modelFiles()): FileMap {
  const ts = tensorsOf(files);
  const out = edit(ts) ?? ts;
  return files.set('model.safetensors', encodeSafetensors(out));
}

export const memory = (files: FileMap, label = 'variant'): MemoryFiles => new MemoryFiles(label, files);
