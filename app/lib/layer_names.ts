/**
 * One naming of layers for every view, tooltip, axis and export (fresh-user trials saw "layer 0
 * embed", "L0", "block 0" and "row N" for the same things). The names are TransformerLens's:
 *
 * - **Block l** (0 … n_layers − 1, TransformerLens `blocks.l`) is written "L{l}" (as in "L3H2"). A
 *   per-block quantity — a head's attention, `blocks.l.hook_attn_out`, `blocks.l.hook_mlp_out` —
 *   is named by its block.
 * - **Residual-stream row r** (0 … n_layers, the logit lens's rows, DESIGN.md §3) is named by what
 *   wrote it last: "embed" for r = 0 (the embeddings, `blocks.0.hook_resid_pre`), "L{r−1}" for the
 *   stream after block r − 1 (`blocks.{r−1}.hook_resid_post`). So "L3" is block 3's output both in the
 *   lens and in a patching grid of `blocks.4.hook_resid_pre` (the same vector).
 *
 * Long forms add the hook the row is read at ("L3 · blocks.3.hook_resid_post"). Display only.
 */
import { hookOfLensRow } from './hooks';

/** Block l as "L{l}". */
export function blockShort(l: number): string {
  return `L${l}`;
}

/** Residual row r (0 = embeddings) as "embed" or "L{r−1}". */
export function residShort(row: number): string {
  return row === 0 ? 'embed' : blockShort(row - 1);
}

/**
 * Residual row r with its hook: "embed · blocks.0.hook_resid_pre", "L2 · blocks.2.hook_resid_post",
 * and ", final" on row nLayers (the stream the unembedding reads).
 */
export function residName(row: number, nLayers: number): string {
  return `${residShort(row)} · ${hookOfLensRow(row)}${row === nLayers ? ', final' : ''}`;
}

/**
 * The short name of the layer a hook belongs to: "embed" for hook_embed / hook_pos_embed and
 * blocks.0.hook_resid_pre; "L{l−1}" for blocks.l.hook_resid_pre (the stream block l − 1 wrote);
 * "L{l}" for any other hook of block l; "final" for ln_final.*; the hook itself otherwise.
 */
export function hookShort(hook: string): string {
  if (hook === 'hook_embed' || hook === 'hook_pos_embed') return 'embed';
  if (hook.startsWith('ln_final.')) return 'final';
  const m = /^blocks\.(\d+)\.(.+)$/.exec(hook);
  if (!m) return hook;
  const l = Number(m[1]);
  return m[2] === 'hook_resid_pre' ? residShort(l) : blockShort(l);
}

/** A hook with its layer's short name: "L2 · blocks.3.hook_resid_pre". */
export function hookName(hook: string): string {
  return `${hookShort(hook)} · ${hook}`;
}

/** Block l with a hook inside it: "L2 · blocks.2.hook_attn_out" (site "hook_attn_out"). */
export function blockName(l: number, site: string): string {
  return hookName(`blocks.${l}.${site}`);
}

/** Axis title of residual rows (ticks: embed, L0, L1, …). */
export const RESID_AXIS = 'residual stream';

/** Axis title of blocks (ticks: L0, L1, …). */
export const BLOCK_AXIS = 'block';

/**
 * A bootstrap interval over residual rows in layer names: "[embed, L3]". Its bounds are quantiles of
 * resampled rows and may fall between two rows; they are widened to the rows around them (the low
 * bound's floor, the high bound's ceiling), so the names never claim more precision than the rows have.
 */
export function residInterval(i: readonly [number, number]): string {
  return `[${residShort(Math.floor(i[0]))}, ${residShort(Math.ceil(i[1]))}]`;
}
