/**
 * Attribution patching (AtP; Nanda 2023, "Attribution Patching"; Kramár et al. 2024, arXiv 2403.00745
 * "AtP*"; DESIGN.md §3 "Attribution"): the first-order estimate of every activation patch of a
 * patching grid from two forwards and one backward (model/backward.ts):
 *
 *   denoise: AtP(l, c) = (h_clean − h_corrupt)[l, c] · ∂Δ/∂h at the corrupted run
 *   noise:   AtP(l, c) = (h_corrupt − h_clean)[l, c] · ∂Δ/∂h at the clean run
 *
 * (the estimate of Δ_patched − Δ_run, in nats), for resid_pre, attn_out, mlp_out, resid_post (cells =
 * layer × position, the dot over d_model) and attn.hook_z (layer × head: the dot over the head's
 * d_head slice summed over positions, which is patching the head at every position). Normalised
 * like exact patching's recovery (studies/patching.ts): r̂ = (Δ_run + AtP − Δ_corrupt)/(Δ_clean − Δ_corrupt),
 * i.e. AtP/(Δc − Δx) denoising and 1 + AtP/(Δc − Δx) noising. Δ is the final-layer margin between the
 * futures' first tokens at the last prompt position (sets: logsumexp).
 *
 * With compareExact the exact grid (patchingGrid) is run too, and the result carries Spearman's rank
 * correlation of the two over the cells and the cells where |r̂ − r| exceeds a threshold: the linear
 * estimate fails where a patch moves the residual stream far. With correction 'qk' the resid_pre cells
 * take AtP*'s attention-saturation correction (atp_qk_fix.ts: block l's pattern recomputed exactly for
 * the patched query and key). The agreement measures are atpAgreement's (one definition for the study
 * and the Patching view). The backward runs on the host (float64) for both backends.
 */
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import type { FutureInput, ResolvedFuture, ChatTurn } from '../prompt';
import { chatTurn } from '../prompt';
import type { Intervention } from '../model/intervention';
import { backward, type BackwardOptions } from '../model/backward';
import { rowMargin } from '../analysis/margin';
import { logSoftmaxCpu } from '../ops/logits.cpu';
import { atpAgreement, type AtpDisagreement } from '../analysis/atp_agreement';
import { qkFixedResidPre } from './atp_qk_fix';
import { hostWeights } from './forward_weights';
import { patchingGrid, PATCH_HOOKS, readPromptPair, type PatchDirection, type PatchHook, type PatchingResult } from './patching';
import type { Progress } from '../progress';

/** Hooks AtP covers: the patching grid's, and resid_post. */
export const ATP_HOOKS = { ...PATCH_HOOKS, resid_post: 'hook_resid_post' } as const;
export type AtpHook = keyof typeof ATP_HOOKS;

export interface AtpRequest extends ChatTurn {
  clean: string;
  corrupt: string;
  good: FutureInput;
  bad: FutureInput;
  hook: AtpHook;
  /** 'denoise' (default): the estimate of clean values patched into the corrupted run; 'noise': the reverse. */
  direction?: PatchDirection;
  /** Also run the exact patching grid (hooks of PATCH_HOOKS only) and compare. */
  compareExact?: boolean;
  /** |r̂ − r| above which a cell is flagged (default 0.1). */
  threshold?: number;
  /** 'qk': AtP*'s attention-saturation correction (resid_pre only; atp_qk_fix.ts). Default: plain AtP. */
  correction?: 'qk';
  interventions?: Intervention[];
  /** Memory budget of the backward (bytes). */
  budgetBytes?: number;
}

export interface AtpResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts), or null: the margins are read after it. */
  sharedPrefix?: SharedPrefix | null;
  hook: AtpHook;
  hookTemplate: string;
  direction: PatchDirection;
  /** 'qk' when AtP*'s correction was applied (the resid_pre cells). */
  correction?: 'qk';
  nLayers: number;
  columns: 'position' | 'head';
  nCols: number;
  cleanIds: number[];
  corruptIds: number[];
  cleanTokens: string[];
  good: ResolvedFuture;
  bad: ResolvedFuture;
  cleanMargin: number;
  corruptMargin: number;
  /** AtP per cell [n_layers·n_cols], in nats (the estimate of Δ_patched − Δ_run). */
  atpNats: Float32Array;
  /** AtP normalised like recovery [n_layers·n_cols]. */
  atp: Float32Array;
  /** With compareExact: the exact grid's recovery [n_layers·n_cols], its Spearman correlation with `atp`, the flagged cells. */
  recovery?: Float32Array;
  rankCorrelation?: number;
  threshold?: number;
  disagreements?: AtpDisagreement[];
  /** Forwards and backwards AtP ran (2 and 1), beside the exact grid's patched positions when compared. */
  forwards: number;
  backwards: number;
}

/**
 * The AtP grid of `req.hook` (two forwards, one backward) and, with compareExact, the exact grid beside it.
 * @throws Error for prompts of different token lengths, equal clean and corrupted margins, an unknown
 *   hook, compareExact on resid_post (no exact grid for it), the 'qk' correction on another hook than
 *   resid_pre, or a backward over the memory budget.
 */
export async function attributionPatching(engine: Engine, req: AtpRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<AtpResult> {
  const s = engine.spec, L = s.nLayers;
  if (!(req.hook in ATP_HOOKS)) throw new Error(`attribution patching hook "${req.hook}": use ${Object.keys(ATP_HOOKS).join(', ')}`);
  if (req.compareExact && !(req.hook in PATCH_HOOKS)) throw new Error(`--compare-exact: the exact patching grid covers ${Object.keys(PATCH_HOOKS).join(', ')}, not ${req.hook}`);
  if (req.correction !== undefined && req.correction !== 'qk') throw new Error(`correction "${req.correction as string}": use qk (AtP*'s attention-saturation fix) or none`);
  const qk = req.correction === 'qk';
  if (qk && req.hook !== 'resid_pre') throw new Error(`AtP*'s attention-saturation correction recomputes the pattern of the block whose queries and keys a patch moves: that is the resid_pre grid, not ${req.hook} (its patch feeds no query or key of its own block)`);
  const direction = req.direction ?? 'denoise';
  if (direction !== 'denoise' && direction !== 'noise') throw new Error(`direction "${direction as string}": use denoise or noise`);
  const { cleanIds, corruptIds, good, bad, sharedPrefix } = readPromptPair(engine, req, 'attribution patching');
  const T = cleanIds.length;
  const [runIds, srcIds] = direction === 'denoise' ? [corruptIds, cleanIds] : [cleanIds, corruptIds];
  const hookTemplate = `blocks.{l}.${ATP_HOOKS[req.hook]}`;
  const hooks = Array.from({ length: L }, (_, l) => hookTemplate.replace('{l}', String(l)));
  const base = req.interventions ?? [];

  // forward 1: the source run's values; forward 2 + backward: the run's values and ∂Δ/∂h
  const qkHooks = (l: number) => ['attn.hook_q', 'attn.hook_k', 'attn.hook_v'].map((h) => `blocks.${l}.${h}`);
  const src = await engine.run(srcIds, { capture: qk ? [...hooks, ...hooks.flatMap((_, l) => qkHooks(l))] : hooks, interventions: base, logits: 'last' });
  const srcMargin = rowMargin(logSoftmaxCpu(src.logits, src.logits.length), good.firstIds, bad.firstIds);
  // with qk the run's q, k, v and pattern too (a backward returns the activations of kept hooks only)
  const keep = new Set(qk ? [...hooks, ...hooks.flatMap((_, l) => ['ln1.hook_normalized', 'attn.hook_z', 'attn.hook_q', 'attn.hook_k', 'attn.hook_v', 'attn.hook_pattern'].map((h) => `blocks.${l}.${h}`))] : hooks);
  const bopts: BackwardOptions = { interventions: base, keep: (h) => keep.has(h), budgetBytes: req.budgetBytes };
  const run = await backward(engine.model, runIds, { kind: 'margin', good: good.firstIds, bad: bad.firstIds }, bopts);
  onProgress?.({ done: 1, total: req.compareExact ? 2 : 1 });
  const [cleanMargin, corruptMargin] = direction === 'denoise' ? [srcMargin, run.value] : [run.value, srcMargin];
  const denom = cleanMargin - corruptMargin;
  if (Math.abs(denom) < 1e-6) throw new Error(`the clean and corrupted prompts give the same margin (Δ = ${cleanMargin.toFixed(4)}), so the normalised estimate (÷ (Δ_clean − Δ_corrupt)) is undefined: choose a corruption that changes the margin`);

  const heads = req.hook === 'z';
  const C = heads ? s.nHeads : T;
  const atpNats = new Float32Array(L * C);
  for (let l = 0; l < L; l++) {
    const a = src.captured.get(hooks[l])!, b = run.acts.get(hooks[l]) ?? (await engine.run(runIds, { capture: [hooks[l]], interventions: base, logits: 'last' })).captured.get(hooks[l])!;
    const g = run.grads.get(hooks[l])!;
    const W = a.length / T;
    for (let t = 0; t < T; t++) for (let i = 0; i < W; i++) {
      const c = heads ? Math.floor(i / s.dHead) : t;
      atpNats[l * C + c] += (a[t * W + i] - b[t * W + i]) * g[t * W + i];
    }
  }
  if (qk) {
    const hw = await hostWeights(engine, { values: false });
    for (let l = 0; l < L; l++) {
      const at = (name: string) => run.acts.get(`blocks.${l}.${name}`)!, from = (name: string) => src.captured.get(`blocks.${l}.${name}`)!;
      const grad = (name: string) => run.grads.get(`blocks.${l}.${name}`)!;
      const fixed = qkFixedResidPre(s, T, {
        x: at('hook_resid_pre'), xSrc: from('hook_resid_pre'), q: at('attn.hook_q'), k: at('attn.hook_k'), v: at('attn.hook_v'),
        qSrc: from('attn.hook_q'), kSrc: from('attn.hook_k'), vSrc: from('attn.hook_v'), pattern: at('attn.hook_pattern'),
        gX: grad('hook_resid_pre'), gN1: grad('ln1.hook_normalized'), gZ: grad('attn.hook_z'), ln1: hw.blocks[l].ln1, window: s.windows[l],
      });
      atpNats.set(fixed, l * C);
    }
  }
  const runMargin = run.value;
  const atp = Float32Array.from(atpNats, (x) => (runMargin + x - corruptMargin) / denom);
  const result: AtpResult = {
    hook: req.hook, hookTemplate, direction, ...(qk ? { correction: 'qk' as const } : {}), nLayers: L, columns: heads ? 'head' : 'position', nCols: C,
    cleanIds, corruptIds, cleanTokens: engine.tokenStrings(cleanIds), good, bad, sharedPrefix, cleanMargin, corruptMargin, atpNats, atp, forwards: 2, backwards: 1,
  };
  if (req.compareExact) {
    signal?.throwIfAborted();
    const exact: PatchingResult = await patchingGrid(engine, { clean: req.clean, corrupt: req.corrupt, ...chatTurn(req), good: req.good, bad: req.bad, hook: req.hook as PatchHook, direction, interventions: req.interventions }, undefined, signal);
    const threshold = req.threshold ?? 0.1;
    const { rankCorrelation, disagreements } = atpAgreement(atp, exact.recovery, C, threshold);
    Object.assign(result, { recovery: exact.recovery, rankCorrelation, threshold, disagreements });
    onProgress?.({ done: 2, total: 2 });
  }
  return result;
}
