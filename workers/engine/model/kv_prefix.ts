/**
 * Prefix KV reuse for analyses that run many forwards which share a prefix: activation patching
 * (a patch at position p leaves positions < p unchanged), intervention windows (the unsteered
 * generation up to step k is shared), branch explorers (every branch shares the text before its
 * fork). A causal transformer's keys and values at positions < p depend only on tokens and
 * interventions at positions < p, so a run that equals a reference run there can start at p and
 * read rows [0, p) of the reference from the KV cache.
 *
 * How to use it:
 * ```ts
 * const kv = new PrefixCache(engine.model);
 * await kv.reference(ids, { nPrompt, interventions: base });       // full run: cache rows [0, T) = reference
 * const p = firstTouchedPosition(extra, nPrompt, ids.length);       // where the new run starts to differ
 * const out = await kv.runFrom(p, ids, { nPrompt, interventions: [...base, extra] }); // computes rows ≥ p only
 * await kv.extend(T, [...ids, ...branch], { nPrompt, interventions: [...base, extra] }); // continue that run
 * ```
 * Rules (checked; each breach throws): ids[0..p) equal the reference's; every intervention that
 * is not one of the reference's own (same object) touches no position < p. After runFrom(p), rows
 * ≥ p hold that run; a later runFrom(p') with p' > p first recomputes the reference's rows
 * [p, p') (logits skipped), so any order is correct and descending p costs nothing extra. If
 * something else ran the model in between (Engine.run, analyse, generate: Transformer.kvVersion
 * moved), the whole prefix is recomputed. snapshot()/restore() copy the valid rows out and back
 * for callers that go deeper and come back (a branch tree).
 *
 * Positions and steps follow DESIGN.md §2: the forward pass that reads position t is step 0 for
 * prompt positions (t < n_prompt) and step t − n_prompt + 1 after them, so a span that covers
 * generated or teacher-forced branch tokens is split into calls where the set of interventions
 * active at that step changes (see forwardSpan).
 */
import type { KvSnapshot, Transformer } from './transformer';
import { firstTouchedPosition, forwardSpan, type SpanOptions, type SpanOutput } from './span';

/** Cache rows of a reference run, copied out by PrefixCache.snapshot. */
export interface PrefixSnapshot { kv: KvSnapshot; ids: number[] }

/** A reference run whose KV-cache rows later runs reuse (see the module docstring). */
export class PrefixCache {
  private ids: number[] = [];
  private opts: SpanOptions | null = null;
  /** Leading cache rows that hold the reference run. */
  private valid = 0;
  private version = -1;
  /** Tokens of the last run (its rows [0, last.length) are in the cache while version holds). */
  private last: number[] = [];

  constructor(readonly model: Transformer) {}

  /** Leading KV-cache rows that hold the reference run now (0 when another run has overwritten them). */
  get validRows(): number {
    return this.model.kvVersion === this.version ? this.valid : 0;
  }

  /**
   * Runs ids from position 0 as the reference (capture and logits as asked).
   * @throws Error as forwardSpan does.
   */
  async reference(ids: readonly number[], opts: SpanOptions): Promise<SpanOutput> {
    this.ids = [...ids];
    this.opts = { nPrompt: opts.nPrompt, interventions: opts.interventions ?? [] };
    const out = await forwardSpan(this.model, ids, 0, ids.length, opts);
    this.valid = ids.length;
    this.last = [...ids];
    this.version = this.model.kvVersion;
    return out;
  }

  /**
   * Runs ids (the whole sequence) computing only positions ≥ p; rows [0, p) come from the
   * reference (recomputed first where a previous run or another caller overwrote them).
   * Captured rows and 'all' logits cover positions p..ids.length−1.
   * @throws Error without a reference, for p outside 0..ids.length−1 or beyond the reference,
   *   for ids that differ from the reference's before p, or for an intervention (not one of the
   *   reference's own) that acts on a position < p.
   */
  async runFrom(p: number, ids: readonly number[], opts: SpanOptions): Promise<SpanOutput> {
    const ref = this.opts;
    if (!ref) throw new Error('PrefixCache.runFrom: run the reference first');
    if (!Number.isInteger(p) || p < 0 || p >= ids.length || p > this.ids.length) throw new Error(`PrefixCache.runFrom: start ${p} is outside 0..${Math.min(ids.length - 1, this.ids.length)}`);
    for (let t = 0; t < p; t++) if (ids[t] !== this.ids[t]) throw new Error(`PrefixCache.runFrom: token ${t} differs from the reference's, so rows before ${p} cannot be reused`);
    if (opts.nPrompt !== ref.nPrompt) throw new Error(`PrefixCache.runFrom: n_prompt ${opts.nPrompt} differs from the reference's ${ref.nPrompt} (steps would shift)`);
    for (const iv of opts.interventions ?? []) {
      if (ref.interventions!.includes(iv)) continue;
      const first = firstTouchedPosition(iv, opts.nPrompt, ids.length);
      if (first < p) throw new Error(`PrefixCache.runFrom: the intervention at ${iv.hook} acts on position ${first}, before the reused prefix ends (${p})`);
    }
    const valid = this.validRows;
    if (p > valid) await forwardSpan(this.model, this.ids, valid, p, { ...ref, logits: 'none' });
    const out = await forwardSpan(this.model, ids, p, ids.length, opts);
    this.valid = p;
    this.last = [...ids];
    this.version = this.model.kvVersion;
    return out;
  }

  /**
   * Continues the last run (reference or runFrom) from position a, on top of the rows [0, a) it
   * wrote: a teacher-forced branch after a patched prompt. The caller passes that run's
   * interventions (checked only for the step split). Rows ≥ a then hold the continuation.
   * @throws Error when another run wrote the cache since, or ids[0..a) differ from the last run's.
   */
  async extend(a: number, ids: readonly number[], opts: SpanOptions): Promise<SpanOutput> {
    if (!this.opts || this.model.kvVersion !== this.version) throw new Error('PrefixCache.extend: the cache no longer holds the last run (another run wrote it since)');
    if (a > this.last.length) throw new Error(`PrefixCache.extend: position ${a} is past the last run's ${this.last.length} positions`);
    for (let t = 0; t < a; t++) if (ids[t] !== this.last[t]) throw new Error(`PrefixCache.extend: token ${t} differs from the last run's`);
    const out = await forwardSpan(this.model, ids, a, ids.length, opts);
    this.valid = Math.min(this.valid, a);
    this.last = [...ids];
    this.version = this.model.kvVersion;
    return out;
  }

  /**
   * Runs ids computing positions ≥ p only and makes this run the new reference (where runFrom keeps
   * the old one): token-by-token decoding and the forks of a branch tree are calls of this — one
   * more token computes one position, a fork computes its positions after the fork. The caller
   * vouches that cache rows [0, p) hold what this run would compute there (studies/branching/explorer.ts
   * records which run computed each row); p is lowered to the rows that still hold the reference
   * and to the first token that differs from it, and to ids.length − 1 when logits or captures are
   * asked for (so at least one position runs).
   * @returns the output over the computed span, and `from`, its first position (ids.length: nothing ran).
   * @throws Error as forwardSpan does.
   */
  async advance(p: number, ids: readonly number[], opts: SpanOptions): Promise<SpanOutput & { from: number }> {
    if (ids.length === 0) throw new Error('PrefixCache.advance: no ids to run');
    const needsRun = (opts.logits ?? 'last') !== 'none' || (opts.capture?.length ?? 0) > 0;
    let from = Math.max(0, Math.min(p, this.validRows, needsRun ? ids.length - 1 : ids.length));
    for (let t = 0; t < from; t++) if (ids[t] !== this.ids[t]) { from = t; break; }
    const out = from < ids.length ? await forwardSpan(this.model, ids, from, ids.length, opts) : { logits: null, captured: new Map<string, Float32Array>() };
    this.ids = [...ids];
    this.last = [...ids];
    this.opts = { nPrompt: opts.nPrompt, interventions: opts.interventions ?? [] };
    this.valid = ids.length;
    this.version = this.model.kvVersion;
    return { ...out, from };
  }

  /** Copies the rows that hold the reference now (null when none do). */
  snapshot(): PrefixSnapshot | null {
    const rows = this.validRows;
    return rows > 0 ? { kv: this.model.snapshotKv(rows), ids: this.ids.slice(0, rows) } : null;
  }

  /**
   * Writes a snapshot of this reference back into the cache.
   * @throws Error when the snapshot was taken of another reference.
   */
  restore(s: PrefixSnapshot): void {
    if (s.ids.some((id, t) => id !== this.ids[t])) throw new Error('PrefixCache.restore: the snapshot belongs to another reference');
    this.model.restoreKv(s.kv);
    this.valid = s.kv.rows;
    this.last = [...s.ids];
    this.version = this.model.kvVersion;
  }

  /** Frees a snapshot's tensors. */
  release(s: PrefixSnapshot): void {
    this.model.releaseKv(s.kv);
  }
}
