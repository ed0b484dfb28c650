/**
 * What a bad-input case feeds the workbench, and how the corpus runner (corpus.test.ts) and the
 * UI spec (e2e/bad_input_corpus.spec.ts) run it. Every input is built from bytes generated here,
 * at test time (stories260K's real files with one thing changed); nothing binary is committed.
 */
import { encodeHeader } from '../../tools/safetensors_write';
import type { FileMap } from '../hardening/model_variants';

/** One input of the corpus. */
export type CaseInput =
  /** A model folder: Engine.load, then (when it loads) an analysis of CORPUS_PROMPT. */
  | { kind: 'model'; files: FileMap; options?: { weightDtype?: 'f16' } }
  /** Raw bytes of a safetensors file: parseSafetensors (header and offsets only). */
  | { kind: 'safetensors'; bytes: Uint8Array }
  /** An analysis on stories260K; interventions are JSON specs as the runner and the UI write them. */
  | { kind: 'analyse'; prompt: string; good: string; bad: string; chatTemplate?: boolean; interventions?: unknown[] }
  /** A generation on stories260K. */
  | { kind: 'generate'; prompt: string; maxNewTokens?: number; temperature?: number; topK?: number; interventions?: unknown[] }
  /** A steering vector file: readVectorFile, then assertVectorFits at blocks.2.hook_resid_post. */
  | { kind: 'vector'; name: string; bytes: Uint8Array }
  /** A dose–response sweep on stories260K (experiment input). */
  | { kind: 'sweep'; layers: number[]; doses: number[]; type?: string; vector?: number[] }
  /** A Hub repo reference as typed (CLI --model or the UI's Hub field): parseRepoRef + HubFiles. */
  | { kind: 'hub'; ref: string; endpoint?: string }
  /**
   * SAE files (a SAELens folder or a Gemma Scope .npz): readSae at `path`, then attached to
   * stories260K (new Sae with the model's spec, which checks d_in and the hook); the result is its config.
   */
  | { kind: 'sae'; files: FileMap; path?: string; hook?: string;
      /** The memory budget left, as the worker and the runner pass it to readSae (default: no bound). */
      maxBytes?: number }
  /**
   * The command-line runner, in process (cli/main.ts main(argv)); in argv MODEL is replaced by
   * stories260K's path, NOMODEL by a folder that does not exist, MODELFILE by its model.safetensors,
   * FOLDER[/file] by `folder` written to a temp dir (or a file of it), EXPERIMENT by `experiment` written to a temp file.
   */
  | { kind: 'cli'; argv: string[]; folder?: FileMap; experiment?: string }
  /** A GET of the dev/preview server's golden-data middleware (tools/golden_data.ts) over a temp shared root holding models/ok.txt and the sibling folder models-private/secret.txt; the body of a 200, else an error "HTTP <status>". */
  | { kind: 'http'; url: string }
  /** An experiment file's text: readExperiment. */
  | { kind: 'experiment'; text: string }
  /** A batch values table: parseValues with the format of `name`. */
  | { kind: 'values'; name: string; text: string }
  /** A labelled prompt set file: parseLabelledSet. */
  | { kind: 'labelled'; name: string; text: string }
  /** Linear probes on stories260K (probeLayers) over two prompt sets. */
  | { kind: 'probe'; positive: string[]; negative: string[]; position?: 'last' | number }
  /** .ci/run's apt-source derivation (`.ci/run --distro-uri SUITE`) over a temp /etc/apt holding `files`. */
  | { kind: 'ci'; files: Record<string, string>; suite: string };

/** What a case must produce. */
export type Expected =
  /** A refusal whose message matches (it names the culprit: file, key, tensor, value, expected). */
  | { error: RegExp }
  /** A result; `check` returns true when it is the right one (and says what it claims). */
  | { ok: string; check: (result: unknown) => boolean };

export interface BadInputCase {
  /** Stable, unique id (area/short-name): failing fuzz inputs and other helpers' cases add entries. */
  id: string;
  /** What is wrong with the input, in a user's words. */
  what: string;
  input: () => CaseInput;
  expect: Expected;
  /** Also run through the UI (the representative third, e2e/bad_input_corpus.spec.ts). */
  ui?: boolean;
  /** The outcome must come within this many milliseconds (a refusal before expensive work). */
  withinMs?: number;
}

/** The prompt every loaded model variant is analysed on. */
export const CORPUS_PROMPT = { prompt: 'Once upon a time there was a girl', good: { text: ' who' }, bad: { text: ' and' } };

const enc = new TextEncoder();

/** A safetensors file: 8-byte length, header text (as given, not re-serialised) and `data` zero bytes. */
export function rawSafetensors(header: string, data = 0, lengthField?: bigint): Uint8Array {
  const hb = enc.encode(header);
  const out = new Uint8Array(8 + hb.length + data);
  new DataView(out.buffer).setBigUint64(0, lengthField ?? BigInt(hb.length), true);
  out.set(hb, 8);
  return out;
}

/** A well-formed one-tensor safetensors file (F32 zeros) with the header's entry for it replaced by `entry`. */
export function oneTensor(entry: Record<string, unknown>, dataBytes: number): Uint8Array {
  return rawSafetensors(JSON.stringify({ w: entry }), dataBytes);
}

/** A .npy file: magic, version, header length field, header text, then `data`. */
export function npy(header: string, data: Uint8Array = new Uint8Array(0), major = 1): Uint8Array {
  const hb = enc.encode(header);
  const pre = major === 1 ? 10 : 12;
  const out = new Uint8Array(pre + hb.length + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, major, 0]);
  const dv = new DataView(out.buffer);
  if (major === 1) dv.setUint16(8, hb.length, true);
  else dv.setUint32(8, hb.length, true);
  out.set(hb, pre);
  out.set(data, pre + hb.length);
  return out;
}

/** float32 little-endian bytes of `values`. */
export const f32bytes = (values: number[]): Uint8Array => new Uint8Array(Float32Array.from(values).buffer);

/** A safetensors vector file of `values` as F32, with optional __metadata__. */
export function stVector(values: number[], metadata: Record<string, string> = {}): Uint8Array {
  const { head } = encodeHeader([{ name: 'steering_vector', shape: [values.length], dtype: 'F32' }], metadata);
  const out = new Uint8Array(head.length + values.length * 4);
  out.set(head);
  out.set(f32bytes(values), head.length);
  return out;
}

export const text = (s: string): Uint8Array => enc.encode(s);
