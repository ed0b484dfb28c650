/**
 * Two futures whose first tokens coincide. The logit-lens and final margins compare first tokens
 * only (DESIGN.md §3: Δ = log p(good₁) − log p(bad₁), for token sets a logsumexp over each set's
 * first tokens), so futures that start alike make Δ ≡ 0 at every layer and position — a blank
 * heatmap that looks like "no preference" — and a shared member of two sets pulls Δ toward 0.
 * A trial typed " dog" vs " door" (both "·do" + …) and got an all-zero heatmap with no word why.
 */

/** The ids in both futures' first-token sets, ascending. Shapes: two id lists; returns ids. */
export function sharedFirstIds(goodFirst: readonly number[], badFirst: readonly number[]): number[] {
  const bad = new Set(badFirst);
  return [...new Set(goodFirst)].filter((id) => bad.has(id)).sort((a, b) => a - b);
}

/** True when the two first-token sets are the same set: the first-token margin is exactly 0 everywhere. */
export function sameFirstTokens(goodFirst: readonly number[], badFirst: readonly number[]): boolean {
  const shared = sharedFirstIds(goodFirst, badFirst);
  return shared.length === new Set(goodFirst).size && shared.length === new Set(badFirst).size;
}

/**
 * The warning an analysis carries when the futures' first tokens overlap, or null.
 * @param token the display text of an id (leading space kept), quoted in the message.
 */
export function firstTokenWarning(goodFirst: readonly number[], badFirst: readonly number[], token: (id: number) => string): string | null {
  const shared = sharedFirstIds(goodFirst, badFirst);
  if (shared.length === 0) return null;
  const names = shared.map((id) => `"${token(id)}" (id ${id})`).join(', ');
  if (sameFirstTokens(goodFirst, badFirst)) {
    return `both futures start with ${names}: the margin compares first tokens only, so Δ is 0 at every layer and position; the sequence margin still compares the whole futures — or choose futures whose first tokens differ`;
  }
  return `the futures share the first token${shared.length > 1 ? 's' : ''} ${names}: Δ counts ${shared.length > 1 ? 'them' : 'it'} on both sides, which pulls it toward 0; make the two sets' first tokens disjoint`;
}

/**
 * The length k of the longest common token prefix of two single-branch futures, kept below both
 * lengths so each still has a first token after it: the decision point is where the futures first
 * differ (Qwen3's template opens every assistant turn with `<think>\n\n</think>\n\n`, and every tool
 * call with `<tool_call>\n{"name": "`). 0 for token sets (more than one sequence on a side) and
 * single-token futures, which are measured as they are. Teacher-forcing the prefix leaves the
 * sequence margin unchanged: Σ log p over the shared tokens is the same on both sides and cancels.
 * Shapes: each future's sequences (one list of ids per branch); returns k ≥ 0.
 */
export function sharedPrefixLength(good: readonly (readonly number[])[], bad: readonly (readonly number[])[]): number {
  if (good.length !== 1 || bad.length !== 1) return 0;
  const [g, b] = [good[0], bad[0]];
  const most = Math.min(g.length, b.length) - 1;
  let k = 0;
  while (k < most && g[k] === b[k]) k++;
  return k;
}
