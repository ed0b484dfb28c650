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
import { custom, int, numList, oneOf, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, GOOD, PROGRESS, PROMPT } from './shared_flags';

/** "0,1,2" or "all" → layer indices (all = undefined until the model is known). @throws Error for anything else. */
export function parseLayerList(s: string): number[] | 'all' {
  if (s === 'all') return 'all';
  const parts = s.split(',').map((p) => p.trim());
  if (parts.some((p) => !/^\d+$/.test(p))) throw new Error(`--layers "${s}": give layer indices like 0,1,2 (whole numbers ≥ 0, no empty items) or "all"`);
  return parts.map(Number);
}

export const SWEEP_FLAGS = {
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(),
  vector: text('FILE', { nonEmpty: true }).describe('the steering vector (.npy, .safetensors or .json); or --intervention-template'),
  type: oneOf(['add', 'add_norm_preserving', 'rotate'] as const).default('add').describe('with --vector: how it is applied'),
  hook: text('TEMPLATE', { nonEmpty: true }).default('blocks.{l}.hook_resid_post').describe('with --vector: the hook, {l} = the layer'),
  'intervention-template': text('JSON', { nonEmpty: true }).describe('an intervention without alpha/theta, {l} in its hook; or --vector'),
  layers: custom(parseLayerList, 'layer indices or "all"', '0,1,2|all', '0,1', ['1,,2', '-1', 'all,1', '1.5', '99']).required().describe('the layers to steer, each < n_layers'),
  doses: numList('-8,-4,0,4,8').required().describe('the doses (alpha, or theta for rotate)'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
};
export type SweepFlags = Values<typeof SWEEP_FLAGS>;

/** Exactly one of --vector / --intervention-template; --type / --hook only with --vector; the template's JSON. @throws Error otherwise. */
export function checkSweep(f: SweepFlags, given: (name: string) => boolean): void {
  sweepTemplate(f, given);
}

/** Every --layers index inside the model. @throws Error naming the flag. */
export function checkLayers(layers: number[] | 'all', nLayers: number): void {
  if (layers === 'all') return;
  const bad = layers.find((l) => l >= nLayers);
  if (bad !== undefined) throw new Error(`--layers: layer ${bad} is out of range; this model has ${nLayers} layers (0..${nLayers - 1})`);
}

/** `sweep` in the runner's --help (docs/runner.md is generated from it). */
export const SWEEP_ABOUT = `sweep prints {layers, doses, dose_key, hooks, margin: [layer][dose], kl: [layer][dose], unsteered_margin};
kl = KL(p_unsteered ‖ p_steered) of the next token in nats; margins are first-token margins at the last
prompt token. The template's hook has {l} for the layer; doses set alpha (add) or theta (rotate, radians).`;

export const VECTOR_FLAGS = {
  method: oneOf(['caa', 'actadd'] as const).required().describe('CAA (mean difference over a set) or ActAdd (one pair)'),
  hook: text('HOOK', { nonEmpty: true }).required().describe('where the vector is read, e.g. blocks.3.hook_resid_post'),
  out: custom((s) => { formatOf(s); return s; }, 'a .npy, .safetensors or .json path', 'FILE.npy|.safetensors|.json', 'v.npy', ['v.txt']).required().describe('the file to write'),
  set: text('FILE.json', { nonEmpty: true }).describe('a contrastive set {"positive": [...], "negative": [...]}; or --positive/--negative'),
  positive: text().describe('the positive prompt'),
  negative: text().describe('the negative prompt'),
  position: custom(parseVectorPosition, 'last, mean or marker:STR', 'last|mean|marker:STR', 'last', ['first', 'marker:']).default('last').describe('where it is read (actadd: last|mean; caa: last|marker:STR)'),
  head: int({ min: 0 }, 'H').describe('attn.hook_z and friends: one head (< n_heads)'),
};
export type VectorFlags = Values<typeof VECTOR_FLAGS>;
export const VECTOR_ABOUT = 'vector writes the vector to --out and prints {out, format, method, hook, d_model, norm, n_positive, n_negative}.';

function parseVectorPosition(s: string): string {
  if (s === 'last' || s === 'mean' || (s.startsWith('marker:') && s.length > 'marker:'.length)) return s;
  throw new Error(`--position ${s}: give last, mean or marker:STR`);
}

/** The vector command's flag combinations. @throws Error for a set and a pair, neither, or a position the method does not read. */
export function checkVector(f: VectorFlags): void {
  if (f.set !== undefined && (f.positive !== undefined || f.negative !== undefined)) throw new Error('give --set FILE or --positive/--negative, not both');
  if (f.set === undefined && (f.positive === undefined || f.negative === undefined)) throw new Error(`--${f.positive === undefined ? 'positive' : 'negative'} is required (or --set FILE): the contrastive prompts`);
  if (f.method === 'actadd' && f.set !== undefined) throw new Error('actadd takes one prompt pair (--positive, --negative); use --method caa for a set');
  if (f.method === 'actadd' && f.position !== 'last' && f.position !== 'mean') throw new Error(`--position ${f.position}: actadd reads "last" or "mean"`);
  if (f.method === 'caa' && f.position !== 'last' && !f.position.startsWith('marker:')) throw new Error(`--position ${f.position}: caa reads "last" or "marker:STR"`);
}

/** The --intervention flag's section (the commands that take it are listed from the table). */
export const interventionUsage = (commands: readonly string[]) => `Interventions (${commands.join(', ')}): --intervention JSON, repeatable, applied in order. Keys:
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
  source     patch: a prompt whose activations at hook replace this run's (or vector: rows [pos][width]);
             encoded as this run's prompt is (--chat-template, --system, --tools, --enable-thinking)
  head       attn.hook_q/k/v/z only: act on one head
  experts    ban_experts (at blocks.L.mlp.hook_router_logits: these experts cannot be chosen) /
             force_experts (at blocks.L.mlp.hook_expert_indices: exactly k ids, weighted by the router's p);
             set_expert_weights (at blocks.L.mlp.hook_expert_weights) takes vector: the k weights;
             patch_route (at blocks.L.mlp.hook_expert_indices) takes source: that prompt's chosen experts
             replace this run's (weighted by this run's router p), or vector: rows [pos][k] of expert ids
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
export function parseJsonFlag(text: string, label: string): unknown {
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
export async function interventionsFromArgs(engine: Engine, texts: readonly string[], run: RunShape, loadSae?: (ref: string) => Promise<Sae>): Promise<Intervention[]> {
  const specs = interventionSpecs(texts);
  return resolveInterventions(engine, specs, run, { loadVector: loadVectorFile, loadSae, label, warn: (m) => process.stderr.write(`warning: ${m}\n`) });
}

const label = (i: number) => `--intervention ${i + 1}`;

/**
 * The --intervention texts as specs: JSON and keys checked (no model needed; run before it loads).
 * @throws Error labelled "--intervention N" for bad JSON or keys.
 */
export function interventionSpecs(texts: readonly string[]): InterventionSpec[] {
  return texts.map((t, i) => parseSpec(parseJsonFlag(t, label(i)), label(i)));
}

/** The sweep subcommand's template: --intervention-template JSON, or built from --vector. */
function sweepTemplate(f: SweepFlags, given: (name: string) => boolean): Omit<InterventionSpec, 'alpha' | 'theta'> {
  const tpl = f['intervention-template'], file = f.vector;
  if ((tpl === undefined) === (file === undefined)) throw new Error('sweep needs exactly one of --vector FILE or --intervention-template JSON');
  if (tpl !== undefined && (given('type') || given('hook'))) throw new Error(`--${given('type') ? 'type' : 'hook'} goes with --vector; --intervention-template carries its own type and hook`);
  if (tpl !== undefined) {
    const o = parseJsonFlag(tpl, '--intervention-template') as Record<string, unknown>;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error('--intervention-template must be a JSON object');
    if (o.alpha !== undefined || o.theta !== undefined) throw new Error('--intervention-template: leave out alpha/theta; --doses sets them');
    // Validate with a placeholder dose so every other key gets parseSpec's checks and messages.
    const key = o.type === 'rotate' ? 'theta' : 'alpha';
    const { [key]: _dose, ...rest } = parseSpec({ ...o, [key]: 0 }, '--intervention-template');
    return rest;
  }
  return { hook: f.hook, type: f.type, vector: file! };
}

/** `branchpoint sweep`: the dose–response table as JSON. Progress goes to stderr with --progress true. */
export async function sweepCommand(engine: Engine, f: SweepFlags, given: (name: string) => boolean, loadSae?: (ref: string) => Promise<Sae>): Promise<unknown> {
  let template = sweepTemplate(f, given);
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
  const showProgress = f.progress;
  checkLayers(f.layers, engine.spec.nLayers);
  const r = await doseResponse(engine, {
    prompt: f.prompt, chatTemplate: f['chat-template'],
    good: { text: f.good }, bad: { text: f.bad },
    template, layers: f.layers === 'all' ? Array.from({ length: engine.spec.nLayers }, (_, l) => l) : f.layers, doses: f.doses,
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
export async function vectorCommand(engine: Engine, f: VectorFlags): Promise<unknown> {
  checkVector(f);
  const { method, hook, out, head, position } = f;
  const format = formatOf(out);
  const setFile = f.set;
  const set = setFile ? readSet(setFile) : { positive: [f.positive!], negative: [f.negative!] };
  let sv: SteeringVector;
  if (method === 'actadd') {
    if (set.positive.length !== 1 || set.negative.length !== 1) throw new Error('actadd takes one prompt pair (--positive, --negative); use --method caa for a set');
    if (position !== 'last' && position !== 'mean') throw new Error(`--position ${position}: actadd reads "last" or "mean"`);
    sv = await actAdd(engine, { positive: set.positive[0], negative: set.negative[0], hook, position, head });
  } else {
    sv = await caaVector(engine, { ...set, hook, head, position: position === 'last' ? 'last' : { marker: position.slice('marker:'.length) } });
  }
  fs.writeFileSync(out, writeVectorFile(format, sv));
  let norm = 0;
  for (const x of sv.vector) norm += x * x;
  return { out, format, method, hook, d_model: sv.dModel, norm: Math.sqrt(norm), n_positive: set.positive.length, n_negative: set.negative.length };
}
