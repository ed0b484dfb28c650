/**
 * Behaviour pairs: the Mechanisms study (DESIGN.md §3 "Mechanisms"; issue 25). Two behaviours, each
 * a labelled contrastive prompt set with its two futures; per layer l (hook blocks.l.hook_resid_post,
 * read at each prompt's probe position, the last token by default):
 * - cos_caa, cos_probe: the cosine of the two difference-of-means (CAA) directions and of the two
 *   probes' weight vectors (analysis/mechanisms.ts; the probe fitted on all examples, logistic.ts fitProbe);
 * - the cross-steering matrix: h += α·û_A at the read position of every prompt of a set (û_A the unit
 *   CAA direction of A), and ΔA, ΔB = the mean change of that set's margin log p(good) − log p(bad)
 *   (first tokens, at the last prompt position: the decision point after the futures' shared prefix,
 *   Engine.decisionPoint, where every prompt is read and steered) with percentile-bootstrap intervals over its prompts
 *   (analysis/bootstrap.ts); the same with û_B; selectivity |ΔB|/|ΔA| and |ΔA|/|ΔB|;
 * - natural_corr: the Pearson correlation of the two probes' scores over a common pool (both sets'
 *   prompts and an optional neutral control set, each read at its position, the control at its last token);
 * - where each becomes causal: per block, the mean over the set's pairs (positive i ↔ negative i of
 *   equal token length) of max over positions of the resid_pre denoising recovery (studies/patching.ts),
 *   the first block reaching 0.5 (studies/report.ts firstCausalBlock) and the Pearson correlation of
 *   the two curves; null ('n/a') for a set without such pairs;
 * - a verdict per layer (analysis/mechanisms.ts mechanismVerdict) with the numbers and thresholds.
 * Steered runs change nothing before the read position, so every steered run of a prompt reuses one
 * unsteered reference run's KV rows (model/kv_prefix.ts) and computes only positions ≥ the read
 * position: with the last token read, one position per (direction, layer) cell instead of a forward.
 */
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import type { FutureInput, ChatTurn } from '../prompt';
import { chatTurn, promptWith } from '../prompt';
import type { Progress } from '../progress';
import type { Intervention } from '../model/intervention';
import { PrefixCache } from '../model/kv_prefix';
import { logitMargin } from '../analysis/margin';
import { bootstrapMean, type BootstrapOptions, type MeanInterval } from '../analysis/bootstrap';
import { pearson } from '../analysis/rank_correlation';
import { fitProbe } from '../analysis/logistic';
import {
  checkBehaviours, cosine, differenceOfMeans, MECHANISM_THRESHOLDS, mechanismVerdict, naturalCorrelation, probeScores, selectivity,
  type BehaviourActivations, type MechanismThresholds, type Verdict,
} from '../analysis/mechanisms';
import { assertClassesDiffer, readIndex, type ProbePosition } from './probe';
import { patchingGrid } from './patching';
import { firstCausalBlock } from './report';

/** One behaviour: a labelled contrastive set (io/prompt_set.ts) and the two futures its margin compares. */
export interface Behaviour {
  /** Its name in the result and in messages. */
  name: string;
  positive: readonly string[];
  negative: readonly string[];
  /** Margin Δ = log p(good) − log p(bad) of the first tokens at the last prompt position. */
  good: FutureInput;
  bad: FutureInput;
  /** Token read (and steered) in each prompt: 'last' (default) or an index (negative counts from the end). */
  position?: ProbePosition;
}

export interface MechanismsRequest extends ChatTurn {
  a: Behaviour;
  b: Behaviour;
  /** Neutral prompts that join the natural-correlation pool (read at their last token). */
  control?: readonly string[];
  /** Blocks to analyse (default all). */
  layers?: readonly number[];
  /** α of the steering h += α·û (û a unit vector, so α is in the residual stream's units). Default DEFAULT_DOSE. */
  dose?: number;
  /** The probes' L2 strength λ (default 1, as the Probes view). */
  l2?: number;
  /** The patching curves (default true; false: causal is n/a). */
  causal?: boolean;
  bootstrap?: BootstrapOptions;
}

/** Default α of the cross-steering. */
export const DEFAULT_DOSE = 4;

/** One set's patching summary (null fields: the set has no pair of equal token length). */
export interface CausalCurve {
  /** Mean over pairs of max_t r per block [n_layers] (all blocks, as in the decision-point report). */
  curve: number[];
  /** The first block (from 1 on) whose mean reaches 0.5, or null. */
  firstBlock: number | null;
  /** Pairs patched, and pairs left out (token lengths differ, or equal clean and corrupted margins). */
  pairs: number;
  skipped: number;
}

export interface MechanismsResult {
  names: [string, string];
  /** The analysed blocks and their hooks, [n]. */
  layers: number[];
  hooks: string[];
  dose: number;
  /** Per analysed layer [n]. */
  cosCaa: (number | null)[];
  cosProbe: (number | null)[];
  /**
   * Mean margin change (nats) with its bootstrap interval, per layer: x_on_y = y's margin under x's
   * direction. Row r's intervals are seeded bootstrap.seed + 4r + c (c = 0 a_on_a, 1 a_on_b, 2 b_on_b, 3 b_on_a).
   */
  crossSteer: { aOnA: MeanInterval[]; aOnB: MeanInterval[]; bOnB: MeanInterval[]; bOnA: MeanInterval[] };
  /** |a_on_b| / |a_on_a| and |b_on_a| / |b_on_b| per layer (null where the own change is 0). */
  selectivityA: (number | null)[];
  selectivityB: (number | null)[];
  naturalCorr: (number | null)[];
  /** The pool's make-up: prompts of A, of B, of the control set. */
  pool: { a: number; b: number; control: number };
  /** Where each becomes causal (null: n/a), and the Pearson correlation of the two curves over blocks. */
  causal: { a: CausalCurve | null; b: CausalCurve | null; similarity: number | null };
  verdict: Verdict[];
  thresholds: MechanismThresholds;
  /** Mean unsteered margin of each set over its prompts (nats). */
  unsteered: { a: number; b: number };
  /** Each set's decision point (its first prompt's): the futures' shared prefix teacher-forced after every prompt, or null. */
  sharedPrefix: { a: SharedPrefix | null; b: SharedPrefix | null };
  /**
   * Cost: a cell is one (direction, set, layer) over that set's prompts, naively one full forward per
   * prompt. forwardEquivalentsPerCell = mean over cells of Σ_prompts (positions computed / prompt
   * length); overheadForwards = the capture and reference forwards of every prompt (shared by all cells).
   */
  cost: { cells: number; forwardEquivalentsPerCell: number; naivePerCell: number; overheadForwards: number; positionsComputed: number };
  interval: string;
}

/** The first token ids of a prompt's two futures. */
interface Futures { good: number[]; bad: number[] }

/** A set's prompts read: activations at the read position per hook [n, d], ids and read positions, unsteered margins. */
interface ReadSet {
  ids: number[][];
  reads: number[];
  rows: Float32Array[];
  margins: number[];
}

/**
 * Checks the request before any forward pass.
 * @throws Error for a dose that is not finite, a layer outside the model, an empty or one-class set,
 *   a set whose classes hold the same prompts, an empty control prompt, or a bad λ.
 */
export function checkMechanismsRequest(engine: Engine, req: MechanismsRequest): void {
  const L = engine.spec.nLayers;
  const dose = req.dose ?? DEFAULT_DOSE;
  if (!Number.isFinite(dose)) throw new Error(`dose ${dose}: give a finite number α (the steering adds α·û, û a unit direction)`);
  if (dose === 0) throw new Error('dose 0: steering by 0 changes nothing, so the cross-steering matrix and selectivity are undefined; give α ≠ 0');
  if (req.l2 !== undefined && !(req.l2 > 0)) throw new Error(`λ ${req.l2}: the probes' L2 strength must be > 0`);
  if (req.layers) {
    if (req.layers.length === 0) throw new Error('layers: give at least one block (or leave it out for all)');
    for (const l of req.layers) if (!Number.isInteger(l) || l < 0 || l >= L) throw new Error(`layer ${l} does not exist (the model has blocks 0..${L - 1})`);
  }
  for (const [key, s] of [['A', req.a], ['B', req.b]] as const) {
    const n = s.positive.length + s.negative.length;
    if (n === 0) throw new Error(`set ${key} (“${s.name}”) is empty: a behaviour needs labelled prompts in both classes`);
    if (Math.min(s.positive.length, s.negative.length) < 2) throw new Error(`set ${key} (“${s.name}”) needs at least 2 prompts in each class for its probe (got ${s.positive.length} positive, ${s.negative.length} negative)`);
    if ([...s.positive, ...s.negative].some((p) => typeof p !== 'string' || p.trim() === '')) throw new Error(`set ${key} (“${s.name}”) holds an empty prompt`);
    assertClassesDiffer(s.positive, s.negative);
  }
  if (req.control?.some((p) => typeof p !== 'string' || p.trim() === '')) throw new Error('the control set holds an empty prompt');
}

/**
 * Runs the Mechanisms study.
 * @param onProgress after each forward pass, steered prompt and patching pair.
 * @param signal checked between forward passes; when aborted the study throws signal.reason.
 * @throws Error as checkMechanismsRequest, for a bad future or prompt (too long, a position outside
 *   it), or activations the maths refuses (analysis/mechanisms.ts checkBehaviours).
 */
export async function mechanismsStudy(engine: Engine, req: MechanismsRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<MechanismsResult> {
  checkMechanismsRequest(engine, req);
  const L = engine.spec.nLayers, d = engine.spec.dModel;
  const layers = req.layers ? [...req.layers] : Array.from({ length: L }, (_, l) => l);
  const hooks = layers.map((l) => `blocks.${l}.hook_resid_post`);
  const dose = req.dose ?? DEFAULT_DOSE, l2 = req.l2 ?? 1;
  const sets = [req.a, req.b] as const;
  const control = req.control ?? [];
  // Encode everything and resolve the futures before the first forward pass: a bad prompt fails fast.
  const enc = sets.map((s) => {
    const texts = [...s.positive, ...s.negative];
    // Each prompt at its futures' decision point (Engine.decisionPoint: a shared prefix teacher-forced
    // after it); text futures are tokenised after it: their first tokens per prompt.
    const dps = texts.map((p) => engine.decisionPoint(promptWith(p, req), s.good, s.bad));
    const ids = dps.map((x) => x.promptIds);
    const reads = ids.map((x, i) => readIndex(s.position ?? 'last', x.length, texts[i]));
    const futures = dps.map((x) => ({ good: x.good.firstIds, bad: x.bad.firstIds }));
    return { texts, ids, reads, futures, sharedPrefix: dps[0]?.sharedPrefix ?? null };
  });
  const controlIds = control.map((p) => engine.encodePrompt(promptWith(p, req)));
  const pairsOf = (k: number) => sets[k].positive.flatMap((_, i) => (i < sets[k].negative.length ? [i] : []));
  const causalOn = req.causal ?? true;
  const nPrompts = enc[0].ids.length + enc[1].ids.length;
  const total = 2 * nPrompts + controlIds.length + (causalOn ? pairsOf(0).length + pairsOf(1).length : 0);
  let done = 0;
  const tick = async () => {
    await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in between forwards (worker)
    signal?.throwIfAborted();
  };
  const progress = () => onProgress?.({ done: ++done, total });

  // 1. Read every prompt: activations at its read position per hook, and its unsteered margin.
  const read = async (ids: number[][], reads: number[], futures: Futures[] | null): Promise<ReadSet> => {
    const rows = hooks.map(() => new Float32Array(ids.length * d));
    const margins: number[] = [];
    for (const [i, x] of ids.entries()) {
      await tick();
      const { captured, logits } = await engine.run(x, { capture: hooks, logits: 'last' });
      hooks.forEach((h, r) => rows[r].set(captured.get(h)!.subarray(reads[i] * d, (reads[i] + 1) * d), i * d));
      if (futures) margins.push(logitMargin(logits, futures[i].good, futures[i].bad));
      progress();
    }
    return { ids, reads, rows, margins };
  };
  const readA = await read(enc[0].ids, enc[0].reads, enc[0].futures);
  const readB = await read(enc[1].ids, enc[1].reads, enc[1].futures);
  const readC = await read(controlIds, controlIds.map((x) => x.length - 1), null);
  const labelsOf = (s: Behaviour) => Uint8Array.from({ length: s.positive.length + s.negative.length }, (_, i) => (i < s.positive.length ? 1 : 0));
  const actA: BehaviourActivations = { name: req.a.name, hooks, width: d, rows: readA.rows, labels: labelsOf(req.a) };
  const actB: BehaviourActivations = { name: req.b.name, hooks, width: d, rows: readB.rows, labels: labelsOf(req.b) };
  checkBehaviours(actA, actB);

  // 2. Directions per layer: unit CAA directions (steering) and probes (cosines, natural correlation).
  const caa = [actA, actB].map((x) => x.rows.map((X) => differenceOfMeans(X, x.labels, d)));
  const units = caa.map((vs, k) => vs.map((v, r) => {
    const norm = Math.hypot(...v);
    if (!(norm > 0)) throw new Error(`set ${'AB'[k]} (“${sets[k].name}”): its two classes have the same mean activation at ${hooks[r]}, so it has no direction to steer along`);
    return Float32Array.from(v, (x) => x / norm);
  }));
  const probes = [actA, actB].map((x) => x.rows.map((X) => fitProbe(X, x.labels, x.labels.length, d, l2)));
  const nPool = readA.ids.length + readB.ids.length + readC.ids.length;
  const naturalCorr = hooks.map((_, r) => {
    const pool = new Float32Array(nPool * d);
    pool.set(readA.rows[r], 0);
    pool.set(readB.rows[r], readA.ids.length * d);
    pool.set(readC.rows[r], (readA.ids.length + readB.ids.length) * d);
    return naturalCorrelation(probeScores(probes[0][r], pool, d), probeScores(probes[1][r], pool, d));
  });

  // 3. Cross-steering: per prompt one unsteered reference run, then each (direction, layer) from the read position.
  const kv = new PrefixCache(engine.model);
  let positionsComputed = 0, feSteered = 0;
  const steer = async (set: ReadSet, futures: Futures[]): Promise<number[][][]> => {
    const deltas = [0, 1].map(() => hooks.map(() => [] as number[])); // [direction][layer][prompt]
    for (const [i, x] of set.ids.entries()) {
      await tick();
      const T = x.length, t = set.reads[i];
      const ref = await kv.reference(x, { nPrompt: T, logits: 'last' });
      const { good, bad } = futures[i];
      const base = logitMargin(ref.logits!, good, bad);
      for (const k of [0, 1]) {
        for (const [r, hook] of hooks.entries()) {
          const iv: Intervention = { hook, op: { kind: 'add', v: units[k][r], alpha: dose }, positions: [t] };
          const out = await kv.runFrom(t, x, { nPrompt: T, interventions: [iv], logits: 'last' });
          deltas[k][r].push(logitMargin(out.logits!, good, bad) - base);
          positionsComputed += T - t;
          feSteered += (T - t) / T;
        }
      }
      progress();
    }
    return deltas;
  };
  const onA = await steer(readA, enc[0].futures), onB = await steer(readB, enc[1].futures);
  const bs = req.bootstrap ?? {};
  const interval = (xs: number[], r: number, cell: number) => bootstrapMean(xs, { ...bs, seed: (bs.seed ?? 0) + 4 * r + cell });
  const crossSteer = {
    aOnA: hooks.map((_, r) => interval(onA[0][r], r, 0)),
    aOnB: hooks.map((_, r) => interval(onB[0][r], r, 1)),
    bOnB: hooks.map((_, r) => interval(onB[1][r], r, 2)),
    bOnA: hooks.map((_, r) => interval(onA[1][r], r, 3)),
  };

  // 4. Where each becomes causal: resid_pre denoising over the set's pairs of equal token length.
  const causalOf = async (k: number): Promise<CausalCurve | null> => {
    if (!causalOn) return null;
    const s = sets[k];
    const curves: number[][] = [];
    let skipped = 0;
    for (const i of pairsOf(k)) {
      await tick();
      const clean = s.positive[i], corrupt = s.negative[i];
      const same = engine.encodePrompt(promptWith(clean, req)).length === engine.encodePrompt(promptWith(corrupt, req)).length;
      if (same) {
        try {
          const g = await patchingGrid(engine, { clean, corrupt, ...chatTurn(req), good: s.good, bad: s.bad, hook: 'resid_pre' }, undefined, signal);
          curves.push(Array.from({ length: L }, (_, l) => Math.max(...g.recovery.subarray(l * g.nCols, (l + 1) * g.nCols))));
        } catch (e) {
          if (signal?.aborted) throw e;
          skipped++; // equal clean and corrupted margins: r undefined for this pair
        }
      } else skipped++;
      progress();
    }
    if (curves.length === 0) return null;
    const curve = Array.from({ length: L }, (_, l) => curves.reduce((acc, c) => acc + c[l], 0) / curves.length);
    return { curve, firstBlock: firstCausalBlock(curve), pairs: curves.length, skipped };
  };
  const causalA = await causalOf(0), causalB = await causalOf(1);
  const sim = causalA && causalB ? pearson(causalA.curve, causalB.curve) : NaN;

  const cosCaa = hooks.map((_, r) => cosine(caa[0][r], caa[1][r]));
  const verdict = hooks.map((_, r) => mechanismVerdict({
    cosCaa: cosCaa[r], aOnA: crossSteer.aOnA[r].mean, aOnB: crossSteer.aOnB[r].mean, bOnB: crossSteer.bOnB[r].mean, bOnA: crossSteer.bOnA[r].mean, naturalCorr: naturalCorr[r],
  }));
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const cells = 4 * hooks.length;
  return {
    names: [req.a.name, req.b.name], layers, hooks, dose,
    cosCaa,
    cosProbe: hooks.map((_, r) => cosine(probes[0][r].w, probes[1][r].w)),
    crossSteer,
    selectivityA: hooks.map((_, r) => selectivity(crossSteer.aOnB[r].mean, crossSteer.aOnA[r].mean)),
    selectivityB: hooks.map((_, r) => selectivity(crossSteer.bOnA[r].mean, crossSteer.bOnB[r].mean)),
    naturalCorr,
    pool: { a: readA.ids.length, b: readB.ids.length, control: readC.ids.length },
    causal: { a: causalA, b: causalB, similarity: Number.isFinite(sim) ? sim : null },
    verdict,
    thresholds: { ...MECHANISM_THRESHOLDS },
    unsteered: { a: mean(readA.margins), b: mean(readB.margins) },
    sharedPrefix: { a: enc[0].sharedPrefix, b: enc[1].sharedPrefix },
    cost: { cells, forwardEquivalentsPerCell: feSteered / cells, naivePerCell: nPrompts / 2, overheadForwards: 2 * nPrompts + readC.ids.length, positionsComputed },
    interval: `means over each set's prompts with ${Math.round((bs.level ?? 0.95) * 100)} % percentile-bootstrap intervals (${bs.resamples ?? 2000} resamples)`,
  };
}
