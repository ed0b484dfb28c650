/**
 * The runner's SAE parts: `branchpoint sae` (features per token, reconstruction, margin
 * attributions) and the loading of SAE paths named by --sae or by intervention specs
 * ({"type":"sae_clamp","sae":PATH,…}, {"vector":{"sae":PATH,"feature":F}}).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Engine } from '../workers/engine/engine';
import { HubFiles, parseRepoRef } from '../workers/engine/io/hub_files';
import type { ModelFiles } from '../workers/engine/io/model_files';
import { NodeFiles } from '../workers/engine/io/node_files';
import { analyseSae } from '../workers/engine/studies/sae_features';
import { neuronpediaUrl } from '../workers/engine/sae/config';
import { assertSaeFits } from '../workers/engine/sae/estimate';
import { readSae } from '../workers/engine/sae/files';
import { Sae } from '../workers/engine/sae/sae';
import { int, intList, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, GOOD, PROMPT } from './shared_flags';

export const SAE_FLAGS = {
  sae: text('PATH', { nonEmpty: true }).required().describe('the SAE (see below)'),
  prompt: PROMPT,
  'top-k': int({ min: 1 }, 'K').describe('features listed per token (default 8)'),
  pin: intList({ min: 0 }, 'F,F…').describe('features whose activation is printed at every token (each < d_sae)'),
  good: GOOD.describe('the good future: with --bad, the margin and its attributions'), bad: BAD,
  'attribution-top': int({ min: 1 }).describe('features ranked by attribution'),
  'ablate-top': int({ min: 0 }).describe('of those, how many are ablated for their Δ margin'),
  hook: text('HOOK', { nonEmpty: true }).describe("an .npz SAE's hook (without a cfg.json beside it)"),
  'chat-template': CHAT_TEMPLATE,
};
export type SaeFlags = Values<typeof SAE_FLAGS>;

/** --good with --bad; --attribution-top / --ablate-top only with them. @throws Error otherwise. */
export function checkSaeFlags(f: SaeFlags): void {
  if ((f.good === undefined) !== (f.bad === undefined)) throw new Error('give both --good and --bad (or neither)');
  if (f.good === undefined && (f['attribution-top'] !== undefined || f['ablate-top'] !== undefined)) throw new Error(`--${f['attribution-top'] !== undefined ? 'attribution-top' : 'ablate-top'} needs --good and --bad: it ranks features by their margin attribution`);
}

export const SAE_ABOUT = `--sae is a SAELens folder (cfg.json + sae_weights.safetensors), a folder with params.npz or an .npz
file (Gemma Scope; --hook names its hook when no cfg.json is beside it), or a Hub path
org/name/folder/…[@revision] (--endpoint, $HF_TOKEN as for --model).
Prints ids, tokens, top_features (per token: indices, values), l0, mse (per element),
explained_variance (over the prompt) and per token; for --pin features their activation at every
token (pinned) and their max-activating tokens (max_activating: up to 5 positions, values); with --good/--bad the margin at the last
position clean and with the SAE spliced in, and features ranked by direct logit attribution
(final norm frozen: a linear approximation) with the ablation Δ margin of the top ones.`;

/**
 * A local path (folder or .npz) or a Hub path org/name/sub/folder[@revision] as files + the path inside them.
 * @throws Error when it is neither.
 */
function saeFiles(ref: string, endpoint?: string): { files: ModelFiles; inner: string } {
  if (fs.existsSync(ref)) {
    if (fs.statSync(ref).isDirectory()) return { files: new NodeFiles(ref), inner: '' };
    return { files: new NodeFiles(path.dirname(ref)), inner: path.basename(ref) };
  }
  const at = ref.indexOf('@');
  const [p, revision] = at < 0 ? [ref, undefined] : [ref.slice(0, at), ref.slice(at + 1)];
  const parts = p.split('/');
  const repo = parts.slice(0, 2).join('/');
  if (parts.length < 2 || !parseRepoRef(repo)) throw new Error(`--sae ${ref}: no such file or folder, and not a Hub path (org/name/folder[@revision])`);
  const hub = new HubFiles(repo, { revision, endpoint: endpoint ?? (process.env.HF_ENDPOINT || undefined), token: process.env.HF_TOKEN });
  return { files: hub, inner: parts.slice(2).join('/') };
}

/**
 * Loads SAEs by path for one engine, each once. Hub SAEs are sized from their headers and refused
 * before download when they would not fit in RAM.
 */
export function saeLoader(engine: Engine, f: { endpoint?: string; hook?: string }): (ref: string) => Promise<Sae> {
  const cache = new Map<string, Promise<Sae>>();
  return (ref) => {
    let p = cache.get(ref);
    if (!p) {
      p = (async () => {
        const { files, inner } = saeFiles(ref, f.endpoint);
        await assertSaeFits(files, inner, { maxBufferSize: Infinity, maxStorageBufferBindingSize: Infinity, memoryBudget: os.totalmem(), device: 'this machine (CPU backend, all of its RAM)' });
        return new Sae(engine.backend, await readSae(files, inner, { hook: f.hook, maxBytes: os.totalmem() }), engine.spec);
      })();
      cache.set(ref, p);
    }
    return p;
  };
}

const rows = (flat: ArrayLike<number>, w: number): number[][] =>
  Array.from({ length: flat.length / w }, (_, r) => Array.from({ length: w }, (_, j) => flat[r * w + j]));
const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

/** `branchpoint sae`: one JSON object (see SAE_FLAGS, SAE_ABOUT). */
export async function saeCommand(engine: Engine, f: SaeFlags, load: (ref: string) => Promise<Sae>): Promise<unknown> {
  checkSaeFlags(f);
  const sae = await load(f.sae);
  const pinned = f.pin ?? [];
  const { good, bad } = f;
  const r = await analyseSae(engine, sae, {
    prompt: f.prompt, chatTemplate: f['chat-template'],
    topK: f['top-k'], pinned, attributionTop: f['attribution-top'], ablateTop: f['ablate-top'],
    ...(good !== undefined ? { good: { text: good }, bad: { text: bad } } : {}),
  });
  const idx = rows(r.topIndices, r.topK), val = rows(r.topValues, r.topK);
  const np = neuronpediaUrl(sae.cfg, 0);
  return {
    sae: sae.label, hook: r.hook, architecture: sae.cfg.architecture, d_in: sae.cfg.dIn, d_sae: r.dSae,
    ids: r.ids, tokens: r.tokens,
    top_features: idx.map((indices, t) => ({ indices, values: val[t] })),
    l0: Array.from(r.l0), mse: Array.from(r.mse),
    explained_variance: finite(r.explainedVariance),
    explained_variance_per_token: Array.from(r.explainedVariancePerToken, finite),
    ...(pinned.length ? {
      pinned: Object.fromEntries(pinned.map((f, k) => [f, Array.from(r.pinnedActs.subarray(k * r.ids.length, (k + 1) * r.ids.length))])),
      max_activating: Object.fromEntries(pinned.map((f) => {
        const pos = Array.from(r.maxPositions.subarray(f * r.maxK, (f + 1) * r.maxK)).filter((t) => t >= 0);
        return [f, { positions: pos, values: Array.from(r.maxValues.subarray(f * r.maxK, f * r.maxK + pos.length)) }];
      })),
    } : {}),
    ...(r.margin ? {
      margin: {
        clean: r.margin.clean, spliced: r.margin.spliced, splice_cost: r.margin.spliced - r.margin.clean,
        dla_total: finite(r.margin.dlaTotal),
        attributions: r.margin.attributions.map((x) => ({ feature: x.feature, activation: x.activation, dla: finite(x.dla), ...(x.ablationDelta !== undefined ? { ablation_delta: x.ablationDelta } : {}) })),
      },
    } : {}),
    ...(np ? { neuronpedia: np.replace(/\/0$/, '/{feature}') } : {}),
  };
}
