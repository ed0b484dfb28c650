/**
 * The runner's steering parts: `--intervention JSON` on margins/generate, the `sweep` subcommand
 * (dose–response) and the `vector` subcommand (ActAdd / CAA vectors written to a file). Specs use
 * exactly the keys of workers/engine/steering/spec.ts, which the UI writes too.
 */
import * as fs from 'node:fs';
import type { Engine } from '../workers/engine/engine';
import type { Sae } from '../workers/engine/sae/sae';
import type { Intervention } from '../workers/engine/model/intervention';
import { resolveInterventions } from '../workers/engine/studies/resolve_interventions';
import { INTERVENTION_TYPES, isSaeFeatureRef, parseSpec, type InterventionSpec, type RunShape } from '../workers/engine/steering/spec';
import { doseResponse } from '../workers/engine/studies/sweep';
import { formatOf, readVectorFile, writeVectorFile, type ImportedVector } from '../workers/engine/steering/vector_io';
import { actAdd, caaVector } from '../workers/engine/studies/vectors';
import { type SteeringVector } from '../workers/engine/steering/vector';
import { type Args, numberFlag } from './args';

/** `sweep` in the runner's --help (docs/runner.md is generated from it). */
export const SWEEP_USAGE = `  branchpoint sweep    --model DIR --prompt TEXT --good TEXT --bad TEXT
                       (--vector FILE [--type add|add_norm_preserving|rotate] [--hook TEMPLATE]
                        | --intervention-template JSON)
                       --layers 0,1,2|all --doses -8,-4,0,4,8
sweep prints {layers, doses, dose_key, hooks, margin: [layer][dose], kl: [layer][dose], unsteered_margin};
kl = KL(p_unsteered ‖ p_steered) of the next token in nats; margins are first-token margins at the last
prompt token. The template's hook has {l} for the layer; doses set alpha (add) or theta (rotate, radians).`;

/** `vector` in the runner's --help. */
export const VECTOR_USAGE = `  branchpoint vector   --model DIR --method caa|actadd --hook HOOK --out FILE.npy|.safetensors|.json
                       (--set FILE.json | --positive TEXT --negative TEXT)
                       [--position last|mean|marker:STR] [--head H]`;

/** The --intervention flag (margins, generate, and every command that takes one). */
export const INTERVENTION_USAGE = `Interventions (margins, generate): --intervention JSON, repeatable, applied in order. Keys:
  hook       hook name, e.g. "blocks.3.hook_resid_post" (any [pos, width] hook)
  type       ${INTERVENTION_TYPES.join(' | ')}
  vector     inline numbers, or a .npy/.safetensors/.json file path (width of the hook, or d_head with head),
             or an SAE feature {"sae": PATH, "feature": F}: its decoder row W_dec[F] scaled to unit norm
  sae        sae_clamp: the SAE (a folder, an .npz, or a Hub path; hook = the SAE's hook_name)
  feature    sae_clamp: the feature F
  value      sae_clamp: the value c; the SAE's error term is kept: x' = x + (c − f_F(x))·W_dec[F]
  alpha      dose for add / add_norm_preserving: h += alpha·v
  theta | t  rotate: angle in radians toward v, or fraction t of the angle (t = 1 reaches v)
  mode       ablate: "zero" | "mean" (vector = the mean) | "project" (remove the vector's direction)
  source     patch: a prompt whose activations at hook replace this run's (or vector: rows [pos][width])
  head       attn.hook_q/k/v/z only: act on one head
  positions  "all" (default) | "prompt" | "generated" | [indices] | {"start": i, "end": j}
             ("generated" starts at the last prompt position, which draws the first new token;
              {"start": n_prompt} leaves the first new token unsteered)
  steps      {"start": k, "end": m}: generation steps [k, m) (0 = the prompt pass); end optional;
             teacher-forced tokens of a multi-token future carry steps 1, 2, … as if generated
  e.g. --intervention '{"hook":"blocks.3.hook_resid_post","type":"add","vector":"happy.npy","alpha":4}'`;

/** Reads a vector file from disk (format from the extension). @throws Error naming the file. */
export function loadVectorFile(file: string): ImportedVector {
  if (!fs.existsSync(file)) throw new Error(`vector file ${file} does not exist`);
  return readVectorFile(file, new Uint8Array(fs.readFileSync(file)));
}

/** Parses one JSON flag value. @throws Error saying which flag holds bad JSON. */
function parseJsonFlag(text: string, label: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${label}: not valid JSON (${(e as Error).message}); quote it in single quotes, e.g. '{"hook":"blocks.1.hook_resid_post","type":"add","vector":"v.npy","alpha":4}'`);
  }
}

/**
 * The `--intervention` flags of a command, resolved for the run (files read, patch sources run).
 * @throws Error labelled "--intervention N" for bad JSON, keys, hooks, widths, values or windows.
 */
export async function interventionsFromArgs(engine: Engine, a: Args, run: RunShape, loadSae?: (ref: string) => Promise<Sae>): Promise<Intervention[]> {
  const texts = a.repeated.get('intervention') ?? [];
  const label = (i: number) => `--intervention ${i + 1}`;
  const specs = texts.map((t, i) => parseSpec(parseJsonFlag(t, label(i)), label(i)));
  return resolveInterventions(engine, specs, run, { loadVector: loadVectorFile, loadSae, label, warn: (m) => process.stderr.write(`warning: ${m}\n`) });
}

/** "0,1,2" or "all" → layer indices. @throws Error for anything else. */
export function parseLayers(text: string, nLayers: number): number[] {
  if (text === 'all') return Array.from({ length: nLayers }, (_, l) => l);
  const out = text.split(',').map((s) => Number(s.trim()));
  if (out.some((l) => !Number.isInteger(l))) throw new Error(`--layers "${text}": give layer indices like 0,1,2 or "all"`);
  return out;
}

/** "-8,-4,0,4,8" → doses. @throws Error for a non-number. */
export function parseDoses(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.some((s) => s === '' || !Number.isFinite(Number(s)))) throw new Error(`--doses "${text}": give numbers like -8,-4,0,4,8`);
  return parts.map(Number);
}

/** The sweep subcommand's template: --intervention-template JSON, or built from --vector. */
function sweepTemplate(a: Args): Omit<InterventionSpec, 'alpha' | 'theta'> {
  const tpl = a.flags.get('intervention-template'), file = a.flags.get('vector');
  if ((tpl === undefined) === (file === undefined)) throw new Error('sweep needs exactly one of --vector FILE or --intervention-template JSON');
  if (tpl !== undefined) {
    const o = parseJsonFlag(tpl, '--intervention-template') as Record<string, unknown>;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error('--intervention-template must be a JSON object');
    if (o.alpha !== undefined || o.theta !== undefined) throw new Error('--intervention-template: leave out alpha/theta; --doses sets them');
    // Validate with a placeholder dose so every other key gets parseSpec's checks and messages.
    const key = o.type === 'rotate' ? 'theta' : 'alpha';
    const { [key]: _dose, ...rest } = parseSpec({ ...o, [key]: 0 }, '--intervention-template');
    return rest;
  }
  const type = a.flags.get('type') ?? 'add';
  if (type !== 'add' && type !== 'add_norm_preserving' && type !== 'rotate') throw new Error(`--type ${type}: use add, add_norm_preserving or rotate`);
  return { hook: a.flags.get('hook') ?? 'blocks.{l}.hook_resid_post', type, vector: file! };
}

/** `branchpoint sweep`: the dose–response table as JSON. Progress goes to stderr with --progress true. */
export async function sweepCommand(engine: Engine, a: Args, required: (key: string) => string, loadSae?: (ref: string) => Promise<Sae>): Promise<unknown> {
  let template = sweepTemplate(a);
  if (isSaeFeatureRef(template.vector)) {
    if (!loadSae) throw new Error('sweep: SAE feature vectors need an SAE loader');
    const { sae, feature } = template.vector;
    const loaded = await loadSae(sae);
    loaded.assertFeature(feature);
    template = { ...template, vector: loaded.decoderRow(feature, true) };
  }
  if (typeof template.vector === 'string') {
    const file = template.vector;
    const imported = loadVectorFile(file);
    if (imported.hook && !template.hook.includes('{l}') && imported.hook !== template.hook) process.stderr.write(`warning: ${file} was computed at ${imported.hook}\n`);
    template = { ...template, vector: imported.vector };
  }
  const showProgress = a.flags.get('progress') === 'true';
  const r = await doseResponse(engine, {
    prompt: required('prompt'), chatTemplate: a.flags.get('chat-template') === 'true',
    good: { text: required('good') }, bad: { text: required('bad') },
    template, layers: parseLayers(required('layers'), engine.spec.nLayers), doses: parseDoses(required('doses')),
  }, showProgress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (showProgress) process.stderr.write('\n');
  return { layers: r.layers, doses: r.doses, dose_key: r.doseKey, hooks: r.hooks, margin: r.margin, kl: r.kl, unsteered_margin: r.unsteeredMargin };
}

/** A contrastive set file: {positive: [...], negative: [...]} (public/steering/*.json). */
function readSet(file: string): { positive: string[]; negative: string[] } {
  const o = parseJsonFlag(fs.readFileSync(file, 'utf8'), file) as { positive?: unknown; negative?: unknown };
  const ok = (x: unknown): x is string[] => Array.isArray(x) && x.length > 0 && x.every((s) => typeof s === 'string');
  if (!ok(o.positive) || !ok(o.negative)) throw new Error(`${file}: expected {"positive": [texts], "negative": [texts]}`);
  return { positive: o.positive, negative: o.negative };
}

/** `branchpoint vector`: computes an ActAdd or CAA vector and writes it to --out. */
export async function vectorCommand(engine: Engine, a: Args, required: (key: string) => string): Promise<unknown> {
  const method = required('method');
  const hook = required('hook');
  const out = required('out');
  const format = formatOf(out);
  const head = a.flags.has('head') ? numberFlag(a, 'head', 0, { int: true, min: 0 }) : undefined;
  const position = a.flags.get('position') ?? 'last';
  const setFile = a.flags.get('set');
  const set = setFile ? readSet(setFile) : { positive: [required('positive')], negative: [required('negative')] };
  let sv: SteeringVector;
  if (method === 'actadd') {
    if (set.positive.length !== 1 || set.negative.length !== 1) throw new Error('actadd takes one prompt pair (--positive, --negative); use --method caa for a set');
    if (position !== 'last' && position !== 'mean') throw new Error(`--position ${position}: actadd reads "last" or "mean"`);
    sv = await actAdd(engine, { positive: set.positive[0], negative: set.negative[0], hook, position, head });
  } else if (method === 'caa') {
    if (position !== 'last' && !position.startsWith('marker:')) throw new Error(`--position ${position}: caa reads "last" or "marker:STR"`);
    sv = await caaVector(engine, { ...set, hook, head, position: position === 'last' ? 'last' : { marker: position.slice('marker:'.length) } });
  } else {
    throw new Error(`--method ${method}: use caa or actadd`);
  }
  fs.writeFileSync(out, writeVectorFile(format, sv));
  let norm = 0;
  for (const x of sv.vector) norm += x * x;
  return { out, format, method, hook, d_model: sv.dModel, norm: Math.sqrt(norm), n_positive: set.positive.length, n_negative: set.negative.length };
}
