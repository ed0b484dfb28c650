/**
 * Non-finite values (NaN, ±Inf) never reach the user as results (issue #8): the error a refused run
 * throws and where it names the fault (the scan itself: analysis/finite.ts). A leaf: the span runner
 * (model/span.ts) locates the site.
 */
/** Where a non-finite value first appeared in a forward pass. */
export interface NonFiniteSite {
  /** Hook name (TransformerLens), e.g. blocks.2.hook_attn_out; 'logits' when every hook was finite. */
  hook: string;
  /** Block index, or null for hook_embed / ln_final / logits. */
  layer: number | null;
  /** Token position (row) of the first non-finite value. */
  position: number;
  /** That value: NaN, Infinity or −Infinity. */
  value: number;
}

/** Thrown instead of returning NaN/Inf results. `site` is null when the forward pass could not be re-run to locate it. */
export class NonFiniteError extends Error {
  constructor(what: string, readonly site: NonFiniteSite | null, token?: string) {
    super(site
      ? `${what} is not finite: the first non-finite value (${site.value}) appears at ${site.hook}${site.layer !== null ? ` (layer ${site.layer})` : ''}, position ${site.position}${token !== undefined ? ` (token ${JSON.stringify(token)})` : ''}. ` +
        `Check the weights and any intervention at or before that hook (a dose too large for float32, a vector with NaN)`
      : `${what} is not finite (NaN or Infinity)`);
    this.name = 'NonFiniteError';
  }
}
