/**
 * Reads an SAE's weights from files, wherever they live (a local folder or file, the Hub, a
 * mirror: any ModelFiles), in the two layouts researchers publish:
 * - SAELens: `cfg.json` + `sae_weights.safetensors` (W_enc [d_in, d_sae], W_dec [d_sae, d_in],
 *   b_enc [d_sae], b_dec [d_in], threshold [d_sae] for JumpReLU);
 * - Gemma Scope: `params.npz` (numpy.savez of the same five arrays), read with fflate.
 * Before any weight is fetched, `estimateSaeFiles` sizes the SAE from the safetensors header or the
 * .npz's size, so a caller can refuse it against a memory budget (see estimate.ts).
 */
import { unzipSync } from 'fflate';
import { firstNonFinite } from '../analysis/finite';
import { formatBytes } from '../io/bytes';
import type { ModelFiles } from '../io/model_files';
import { decodeTensor, parseHeader, parseSafetensors, readHeaderLength } from '../io/safetensors';
import { readNpyArray } from '../io/npy';
import { gemmaScopeConfig, gemmaScopeSite, parseSaeLensConfig, type SaeConfig } from './config';
import type { SaeWeights } from './sae';

/** Where in a ModelFiles the SAE is: its folder (may be '') and, for Gemma Scope, the .npz file. */
interface SaeLocation { dir: string; layout: 'sae_lens' | 'npz'; npz?: string }

const join = (dir: string, file: string): string => (dir === '' ? file : `${dir.replace(/\/$/, '')}/${file}`);

/**
 * Finds the SAE under `path`: a folder with cfg.json + sae_weights.safetensors (SAELens), a
 * folder with params.npz, or a path to an .npz file.
 * @throws Error saying what was looked for when neither layout is there.
 */
async function locate(files: ModelFiles, path: string): Promise<SaeLocation> {
  if (/\.npz$/i.test(path)) return { dir: path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '', layout: 'npz', npz: path };
  if (await files.has(join(path, 'sae_weights.safetensors'))) return { dir: path, layout: 'sae_lens' };
  if (await files.has(join(path, 'params.npz'))) return { dir: path, layout: 'npz', npz: join(path, 'params.npz') };
  const where = path === '' ? files.label : `${files.label}/${path}`;
  throw new Error(`${where}: no SAE found — expected cfg.json + sae_weights.safetensors (SAELens) or params.npz (Gemma Scope)`);
}

/**
 * The hook given beside an SAE whose config names one: they must agree (an SAE reads the
 * activation it was trained on; a different hook is a mistake, not an override).
 * @throws Error naming both hooks and where the SAE's comes from.
 */
function assertHookAgrees(given: string | undefined, named: string, where: string): void {
  if (given && given !== named) throw new Error(`${where} names the hook ${named}, but ${given} was given; an SAE reads the activation it was trained on — give ${named} (or no hook)`);
}

/**
 * The hook of a Gemma Scope .npz: the cfg.json beside it, else the Gemma Scope Hub path
 * (layer_L/width_W/…), else the caller's; a caller's hook that disagrees with either is refused.
 * @throws Error asking for the hook when none of these names it.
 */
async function npzSite(files: ModelFiles, loc: SaeLocation, hook?: string): Promise<{ hookName: string; neuronpediaId?: string }> {
  const fromPath = gemmaScopeSite(`${files.label}/${loc.npz}`);
  if (await files.has(join(loc.dir, 'cfg.json'))) {
    const where = `${files.label}: ${join(loc.dir, 'cfg.json')}`;
    const cfg = parseSaeLensConfig(await readJsonBytes(files, join(loc.dir, 'cfg.json')), where);
    assertHookAgrees(hook, cfg.hookName, where);
    return { hookName: cfg.hookName, ...(cfg.neuronpediaId ? { neuronpediaId: cfg.neuronpediaId } : {}) };
  }
  if (fromPath) {
    assertHookAgrees(hook, fromPath.hookName, `${files.label}: the Gemma Scope path ${loc.npz}`);
    return fromPath;
  }
  if (hook) return { hookName: hook };
  throw new Error(`${files.label}: ${loc.npz} has no config naming its hook (Gemma Scope ships none); give the hook, e.g. blocks.12.hook_resid_post`);
}

async function readJsonBytes(files: ModelFiles, path: string): Promise<unknown> {
  const text = new TextDecoder().decode(await files.bytes(path));
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${files.label}: ${path} is not valid JSON (${(e as Error).message})`);
  }
}

/** Tensor names and the shapes a config implies. */
function expectedShapes(cfg: SaeConfig): Record<string, number[]> {
  return {
    W_enc: [cfg.dIn, cfg.dSae], W_dec: [cfg.dSae, cfg.dIn], b_enc: [cfg.dSae], b_dec: [cfg.dIn],
    ...(cfg.architecture === 'jumprelu' ? { threshold: [cfg.dSae] } : {}),
  };
}

/**
 * Checks every tensor against the config's shapes and for NaN/Infinity, and assembles the weights.
 * @throws Error naming the file and tensor: missing, wrong shape (expected vs got), non-finite.
 */
function assemble(cfg: SaeConfig, label: string, file: string, get: (name: string) => { data: Float32Array; shape: number[] } | undefined, present: string[]): SaeWeights {
  const out: Record<string, Float32Array> = {};
  for (const [name, shape] of Object.entries(expectedShapes(cfg))) {
    const t = get(name);
    if (!t) throw new Error(`${label}: ${file} has no tensor "${name}" (it holds ${present.join(', ') || 'nothing'}); a ${cfg.architecture} SAE needs W_enc, W_dec, b_enc, b_dec${cfg.architecture === 'jumprelu' ? ', threshold' : ''}`);
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new Error(`${label}: ${file}: "${name}" has shape [${t.shape.join(', ')}], expected [${shape.join(', ')}] (d_in = ${cfg.dIn}, d_sae = ${cfg.dSae})`);
    }
    const bad = firstNonFinite(t.data);
    if (bad >= 0) throw new Error(`${label}: ${file}: "${name}"[${bad}] is ${t.data[bad]}; SAE weights must be finite`);
    out[name] = t.data;
  }
  return { cfg, label, W_enc: out.W_enc, W_dec: out.W_dec, b_enc: out.b_enc, b_dec: out.b_dec, ...(out.threshold ? { threshold: out.threshold } : {}) };
}

/**
 * Reads an .npz (a zip of .npy files; numpy.savez or savez_compressed) into named arrays.
 * The unpacked sizes are read from the zip's directory first, so a highly compressed file (a few
 * kB that would unpack to gigabytes) is refused before anything is inflated.
 * @param maxBytes bytes the unpacked .npy entries may take (the memory budget left); Infinity = no bound.
 * @throws Error naming the file when it is not a zip, unpacks to more than `maxBytes`, or an array
 *   is not a float .npy.
 */
export function readNpz(bytes: Uint8Array, name = 'params.npz', maxBytes = Infinity): Map<string, { data: Float32Array; shape: number[] }> {
  let entries: Record<string, Uint8Array>;
  try {
    let unpacked = 0;
    unzipSync(bytes, { filter: (f) => { if (f.name.endsWith('.npy')) unpacked += f.originalSize; return false; } });
    if (unpacked > maxBytes) {
      throw new NpzTooLarge(`${name}: its arrays unpack to ${formatBytes(unpacked)} (the file is ${formatBytes(bytes.byteLength)}), more than the ${formatBytes(maxBytes)} the memory budget has left`);
    }
    entries = unzipSync(bytes, { filter: (f) => f.name.endsWith('.npy') });
  } catch (e) {
    if (e instanceof NpzTooLarge) throw new Error(e.message);
    throw new Error(`${name}: not a valid .npz (zip) file (${(e as Error).message})`);
  }
  const out = new Map<string, { data: Float32Array; shape: number[] }>();
  for (const [entry, data] of Object.entries(entries)) {
    if (!entry.endsWith('.npy')) continue;
    out.set(entry.slice(0, -4), readNpyArray(data, `${name}/${entry}`));
  }
  return out;
}

class NpzTooLarge extends Error {}

/** Options of readSae. */
export interface ReadSaeOptions {
  /** Hook for a Gemma Scope .npz that has no cfg.json beside it and no Gemma Scope path; where a config names the hook, one that differs is refused. */
  hook?: string;
  /** Download progress of the weight file. */
  onProgress?: (loaded: number, total: number) => void;
  /** Bytes an .npz's arrays may unpack to (the memory budget left); refused before inflating when more. */
  maxBytes?: number;
}

/**
 * Reads an SAE from `path` inside `files` ('' = the root): a SAELens folder, a folder holding
 * params.npz, or an .npz file.
 * @throws Error for a missing layout, a malformed cfg.json (parseSaeLensConfig's messages), a
 *   malformed safetensors or .npz, a missing tensor, a tensor whose shape disagrees with d_in/d_sae,
 *   or NaN/Infinity in a weight.
 */
export async function readSae(files: ModelFiles, path = '', opts: ReadSaeOptions = {}): Promise<SaeWeights> {
  const loc = await locate(files, path);
  const label = path === '' ? files.label : `${files.label}/${path}`;
  if (loc.layout === 'sae_lens') {
    const cfgPath = join(loc.dir, 'cfg.json');
    if (!(await files.has(cfgPath))) throw new Error(`${label}: cfg.json is missing beside sae_weights.safetensors`);
    const cfg = parseSaeLensConfig(await readJsonBytes(files, cfgPath), `${label}: cfg.json`);
    assertHookAgrees(opts.hook, cfg.hookName, `${label}: cfg.json`);
    const file = join(loc.dir, 'sae_weights.safetensors');
    const bytes = await files.bytes(file, opts.onProgress);
    const h = parseSafetensors(bytes, file);
    const get = (name: string) => {
      const e = h.tensors.get(name);
      return e && { data: decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype), shape: e.shape };
    };
    return assemble(cfg, label, 'sae_weights.safetensors', get, [...h.tensors.keys()]);
  }
  const site = await npzSite(files, loc, opts.hook);
  const arrays = readNpz(await files.bytes(loc.npz!, opts.onProgress), loc.npz, opts.maxBytes);
  const wEnc = arrays.get('W_enc');
  if (!wEnc || wEnc.shape.length !== 2) throw new Error(`${label}: ${loc.npz} needs a 2-D "W_enc" [d_in, d_sae] (it holds ${[...arrays.keys()].join(', ') || 'nothing'})`);
  const cfg = gemmaScopeConfig(wEnc.shape[0], wEnc.shape[1], site.hookName, site.neuronpediaId);
  return assemble(cfg, label, loc.npz!, (n) => arrays.get(n), [...arrays.keys()]);
}

/** Sizes known before the weights are fetched. */
export interface SaeFileSize {
  /** d_in and d_sae when the header says (SAELens); undefined for an .npz until it is read. */
  dIn?: number;
  dSae?: number;
  /** Bytes of the weight file. */
  fileBytes: number;
}

/**
 * The SAE's weight-file size (and widths, from the safetensors header) without reading weights:
 * two small range requests for SAELens, one size request for an .npz.
 * @throws Error as readSae for a missing layout or a malformed header.
 */
export async function estimateSaeFiles(files: ModelFiles, path = ''): Promise<SaeFileSize> {
  const loc = await locate(files, path);
  if (loc.layout === 'npz') return { fileBytes: await files.size(loc.npz!) };
  const file = join(loc.dir, 'sae_weights.safetensors');
  const size = await files.size(file);
  const hlen = readHeaderLength(await files.range(file, 0, 8), size, file);
  const h = parseHeader(await files.range(file, 8, 8 + hlen), size, file);
  const w = h.tensors.get('W_enc');
  return { fileBytes: size, ...(w && w.shape.length === 2 ? { dIn: w.shape[0], dSae: w.shape[1] } : {}) };
}
