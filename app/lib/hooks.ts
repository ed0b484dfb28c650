/**
 * Hook names as the steering UI uses them, read from the engine's single list of hook points
 * (workers/engine/model/hooks.ts): which hooks a row op can steer, which are per head, and where a hook
 * sits among the rows of the logit-lens heatmap.
 */
import { hookInfo } from '../../workers/shared';

/** The hooks of a model (ModelInfo.hookNames) that interventions can act on ([pos, width]), in forward order. */
export function steerableHooks(hookNames: readonly string[]): string[] {
  return hookNames.filter((h) => hookInfo(h)?.steerable);
}

/**
 * The hooks inside a block that interventions can act on at every layer (blocks.{l}.<site>): the
 * sites the model's hook list (workers/engine/model/hooks.ts presentAt) has in every block, so a
 * mixture-of-experts model's router hooks where some layers are dense, or a dense layer's
 * mlp.hook_pre where others are sparse, are not offered for all layers (the dose–response sweep).
 */
export function everyBlockSites(hookNames: readonly string[]): string[] {
  const byLayer = new Map<string, Set<string>>();
  for (const h of steerableHooks(hookNames)) {
    const m = /^blocks\.(\d+)\.(.+)$/.exec(h);
    if (m) byLayer.set(m[1], (byLayer.get(m[1]) ?? new Set()).add(m[2]));
  }
  const sets = [...byLayer.values()];
  return sets.length ? [...sets[0]].filter((site) => sets.every((x) => x.has(site))) : [];
}

/**
 * Shape and meaning of a concrete hook as declared, with its block number in place of the
 * declaration's "l": "[pos, d_model] · residual stream after block 3" for blocks.3.hook_resid_post
 * (trials read a literal "block l" in the intervention editor).
 */
export function hookDescription(hook: string): string {
  const info = hookInfo(hook);
  if (!info) return 'unknown hook';
  const block = /^blocks\.(\d+)\./.exec(hook)?.[1];
  return `${info.shape} · ${block === undefined ? info.meaning : info.meaning.replace(/\bblock l\b/g, `block ${block}`)}`;
}

/** True for hooks whose rows are heads side by side (attn.hook_q/k/v/z), where "head" applies. */
export { isPerHeadHook as isPerHead } from '../../workers/shared';

/** The hook a click on lens row `row` steers: row 0 (embeddings) = blocks.0.hook_resid_pre, row l = blocks.{l−1}.hook_resid_post. */
export function hookOfLensRow(row: number): string {
  return row === 0 ? 'blocks.0.hook_resid_pre' : `blocks.${row - 1}.hook_resid_post`;
}

/**
 * The first lens row whose residual stream carries an intervention at `hook`: 0 for the
 * embeddings and blocks.0.hook_resid_pre, l for blocks.l.hook_resid_pre, l+1 for any other hook of
 * block l (it is added into the residual stream after block l), nLayers for ln_final.
 */
export function lensRowOf(hook: string, nLayers: number): number {
  if (hook === 'hook_embed' || hook === 'hook_pos_embed') return 0;
  if (hook.startsWith('ln_final.')) return nLayers;
  const m = /^blocks\.(\d+)\.(.+)$/.exec(hook);
  if (!m) return 0;
  const l = Number(m[1]);
  return m[2] === 'hook_resid_pre' ? l : l + 1;
}

/**
 * The residual-stream row a residual hook reads: blocks.l.hook_resid_pre is row l and
 * blocks.l.hook_resid_post row l + 1 — the same vector as blocks.{l+1}.hook_resid_pre
 * (TransformerLens names one tensor twice). null for any other hook.
 */
export function residRow(hook: string): number | null {
  const m = /^blocks\.(\d+)\.hook_resid_(pre|post)$/.exec(hook);
  return m ? Number(m[1]) + (m[2] === 'post' ? 1 : 0) : null;
}

/** Whether two hook names are one point of the forward pass: the same name, or the same residual row under two names. */
export function sameHookPoint(a: string, b: string): boolean {
  if (a === b) return true;
  const ra = residRow(a);
  return ra !== null && ra === residRow(b);
}

/** The model dimensions a hook's declared width is written in (ModelInfo's fields). */
export interface Dims {
  dModel: number;
  dMlp: number;
  nHeads: number;
  nKvHeads: number;
  dHead: number;
}

/**
 * Values a vector needs to steer `hook`, from the shape the hook declares: d_model, d_mlp,
 * n_heads·d_head or n_kv_heads·d_head; d_head when one head is steered. null for a hook that is
 * not [pos, width].
 */
export function vectorWidth(hook: string, dims: Dims, oneHead: boolean): number | null {
  const symbol = /^\[pos, (.+)\]$/.exec(hookInfo(hook)?.shape ?? '')?.[1];
  if (oneHead && symbol?.endsWith('d_head')) return dims.dHead;
  switch (symbol) {
    case 'd_model': return dims.dModel;
    case 'd_mlp': return dims.dMlp;
    case 'n_heads·d_head': return dims.nHeads * dims.dHead;
    case 'n_kv_heads·d_head': return dims.nKvHeads * dims.dHead;
    default: return null;
  }
}
