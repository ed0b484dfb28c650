/**
 * Can two models be compared, and how (DESIGN.md §3 "Model comparison": models A and B with the
 * same tokenizer and shapes)? Token-aligned comparisons (lens B − A, residual divergence, sink
 * divergence) need the same tokenizer: identical vocabularies (piece ↔ id) and the same ids for the
 * prompt and the futures. Cross-model patching and the weight diff also need the same architecture
 * and shapes. Each check lists exactly what differs, in words a user can act on.
 */
import type { Engine } from '../engine';
import type { ModelSpec } from '../arch/spec';
import type { FutureInput, PromptInput } from '../prompt';

/** What a comparison needs of the pair: 'tokens' (token-aligned views) or 'weights' (also same architecture and shapes: weight diff, cross-model patching). */
export type ComparisonNeed = 'tokens' | 'weights';

/** Two models that cannot be compared as asked; `differences` lists each difference as a short phrase. */
export class ModelMismatchError extends Error {
  constructor(readonly need: ComparisonNeed, readonly differences: string[], labelA: string, labelB: string) {
    super(`model A [${labelA}] and model B [${labelB}] ${need === 'tokens' ? 'do not share a tokenizer, so they cannot be compared token by token' : 'differ in architecture or shapes, so their weights and activations cannot be compared (weight diff, cross-model patching)'}: ${differences.join('; ')}`);
    this.name = 'ModelMismatchError';
  }
}

const show = (piece: string | undefined) => (piece === undefined ? 'absent' : `'${piece}'`);

/**
 * The differences between two tokenizers, and, when given, between the ids each assigns to one
 * prompt and its futures; [] when they agree.
 * Phrases: "vocabulary: 512 vs 32000 tokens", "vocabulary id 17: 'the' vs ' the'",
 * "prompt: 9 vs 11 tokens", "prompt token 3: id 17 'the' vs id 18 ' the'", "good future: ids 393 vs 394".
 */
export function tokenizerDifferences(a: Engine, b: Engine, prompt?: PromptInput & { good?: FutureInput; bad?: FutureInput }): string[] {
  const out: string[] = [];
  const va = a.prompts.tokenizer.vocabulary(), vb = b.prompts.tokenizer.vocabulary();
  if (va.length !== vb.length) out.push(`vocabulary: ${va.length} vs ${vb.length} tokens`);
  const byId = (v: [string, number][]) => new Map(v.map(([piece, id]) => [id, piece]));
  const ia = byId(va), ib = byId(vb);
  const ids = [...new Set([...ia.keys(), ...ib.keys()])].sort((x, y) => x - y);
  const differing = ids.filter((id) => ia.get(id) !== ib.get(id));
  if (differing.length > 0) {
    const id = differing[0];
    out.push(`vocabulary id ${id}: ${show(ia.get(id))} vs ${show(ib.get(id))}${differing.length > 1 ? ` (and ${differing.length - 1} more ids differ)` : ''}`);
  }
  if (a.spec.dVocab !== b.spec.dVocab) out.push(`embedding rows (vocab_size): ${a.spec.dVocab} vs ${b.spec.dVocab}`);
  if (!prompt) return out;
  const pa = a.encodePrompt(prompt), pb = b.encodePrompt(prompt);
  if (pa.length !== pb.length) out.push(`prompt: ${pa.length} vs ${pb.length} tokens`);
  for (let t = 0; t < Math.min(pa.length, pb.length); t++) {
    if (pa[t] !== pb[t]) {
      out.push(`prompt token ${t}: id ${pa[t]} ${show(a.tokenStrings([pa[t]], pa.slice(0, t))[0])} vs id ${pb[t]} ${show(b.tokenStrings([pb[t]], pb.slice(0, t))[0])}`);
      break;
    }
  }
  if (out.length > 0) return out;
  for (const name of ['good', 'bad'] as const) {
    const f = prompt[name];
    if (!f) continue;
    const fa = a.resolveFuture(pa, f, prompt, name).sequences, fb = b.resolveFuture(pb, f, prompt, name).sequences;
    if (JSON.stringify(fa) !== JSON.stringify(fb)) out.push(`${name} future: ids ${JSON.stringify(fa)} vs ${JSON.stringify(fb)}`);
  }
  return out;
}

/** The ModelSpec fields that must agree for weights and activations to correspond, in message order. */
const SHAPE_FIELDS = ['modelType', 'nLayers', 'dModel', 'nHeads', 'nKvHeads', 'dHead', 'dMlp', 'dVocab', 'norm', 'act', 'gatedMlp', 'parallelResidual', 'sandwichNorms', 'qkNorm', 'positional', 'rotaryDims'] as const satisfies readonly (keyof ModelSpec)[];

/** How each field is named in a message (TransformerLens / HF names). */
const FIELD_NAME: Record<(typeof SHAPE_FIELDS)[number], string> = {
  modelType: 'architecture (model_type)', nLayers: 'n_layers', dModel: 'd_model', nHeads: 'n_heads', nKvHeads: 'n_kv_heads', dHead: 'd_head',
  dMlp: 'd_mlp', dVocab: 'd_vocab', norm: 'norm', act: 'activation', gatedMlp: 'gated MLP', parallelResidual: 'parallel residual',
  sandwichNorms: 'sandwich norms', qkNorm: 'QK norm', positional: 'positions', rotaryDims: 'rotary dims',
};

/** The architecture and shape differences of two specs ("d_model 64 vs 128", …); [] when they agree. */
export function architectureDifferences(a: ModelSpec, b: ModelSpec): string[] {
  return SHAPE_FIELDS.filter((f) => a[f] !== b[f]).map((f) => `${FIELD_NAME[f]} ${String(a[f])} vs ${String(b[f])}`);
}

/**
 * Refuses a pair that cannot be compared as `need` asks, with every difference named.
 * @param prompt the prompt (and futures) whose ids must agree, for token-aligned comparisons.
 * @throws ModelMismatchError listing the tokenizer differences (need 'tokens'), or the tokenizer,
 *   architecture and shape differences (need 'weights').
 */
export function assertComparable(a: Engine, b: Engine, need: ComparisonNeed, prompt?: PromptInput & { good?: FutureInput; bad?: FutureInput }): void {
  const arch = need === 'weights' ? architectureDifferences(a.spec, b.spec) : [];
  // A different vocabulary size already says the tokenizers differ; the prompt check would only repeat it.
  const tok = tokenizerDifferences(a, b, prompt);
  const all = [...arch, ...tok.filter((d) => !(arch.length > 0 && d.startsWith('embedding rows')))];
  if (all.length > 0) throw new ModelMismatchError(need, all, a.label, b.label);
}
