/**
 * Steering-vector sources computed from the model's own activations at a hook (DESIGN.md §3
 * "Steering vectors"), both through Engine.run's capture:
 * - ActAdd (Turner et al., "Activation Addition", arXiv 2308.10248): one prompt pair; the
 *   difference of the hook's activations, at the last token or averaged over aligned positions.
 * - CAA / difference of means (Rimsky et al., "Contrastive Activation Addition", arXiv 2312.06681):
 *   mean activation over the positive texts minus the mean over the negative texts at one position.
 */
import type { Engine } from '../engine';
import { promptWith, type ChatTurn } from '../prompt';
import type { SteeringVector } from '../steering/vector';
import { hookWidth } from '../model/hook_width';
import type { Progress } from '../progress';

/** CAA result: the vector and the dataset mean μ of all activations used (for mean ablation). */
export interface CaaVector extends SteeringVector {
  /** [dModel] mean over positive ∪ negative activations at the chosen position. */
  mean: Float32Array;
}

export interface ActAddRequest {
  positive: string;
  negative: string;
  hook: string;
  /** 'last' (default): last token of each prompt; 'mean': average over positions 0..min(T+, T−)−1. */
  position?: 'last' | 'mean';
  /** Per-head hooks (attn.hook_z...): keep this head's d_head slice. */
  head?: number;
}

export interface CaaRequest {
  positive: readonly string[];
  negative: readonly string[];
  hook: string;
  /**
   * 'last' (default): each text's last token. {marker}: each text contains the marker once, just
   * before the answer token; the marker is removed and the first token of what follows is read.
   */
  position?: 'last' | { marker: string };
  head?: number;
  /** The chat turn each text is rendered in (prompt.ts promptWith: chat template, system prompt, tools); default: each text as typed. */
  turn?: ChatTurn;
  /** Called after each text's forward pass. */
  onProgress?: (p: Progress) => void;
}

/** The activation rows [T, width] of `hook` for one prompt (in `turn`'s chat turn, when given), and the prompt ids. */
async function activations(engine: Engine, prompt: string, hook: string, turn: ChatTurn = {}): Promise<{ ids: number[]; rows: Float32Array }> {
  const ids = engine.encodePrompt(promptWith(prompt, turn));
  const { captured } = await engine.run(ids, { capture: [hook], logits: 'last' });
  return { ids, rows: captured.get(hook)! };
}

/** Checks the hook and head; returns the slice [offset, offset+len) of a row the vector keeps. */
function slice(engine: Engine, hook: string, head: number | undefined): { width: number; offset: number; len: number } {
  const hw = hookWidth(engine.spec, hook);
  if (head === undefined) return { width: hw.width, offset: 0, len: hw.width };
  if (hw.heads === undefined) throw new Error(`head ${head}: ${hook} is not a per-head hook (attn.hook_q/k/v/z are)`);
  if (!Number.isInteger(head) || head < 0 || head >= hw.heads) throw new Error(`head ${head} does not exist: ${hook} has heads 0..${hw.heads - 1}`);
  return { width: hw.width, offset: head * engine.spec.dHead, len: engine.spec.dHead };
}

/**
 * ActAdd steering vector from one prompt pair (Turner et al. 2023, arXiv 2308.10248): h⁺ − h⁻ at
 * the hook. Turner et al. pad the shorter prompt to equal length and add the per-position
 * difference at the front of the user's prompt; here the difference is reduced to one vector, at
 * the last token ('last') or averaged over the aligned positions 0..min(T⁺, T⁻)−1 ('mean').
 * @returns vector [width] (or [d_head] with head).
 * @throws Error for an unknown or non-steerable hook, a bad head, or an empty prompt.
 */
export async function actAdd(engine: Engine, req: ActAddRequest): Promise<SteeringVector> {
  const { width, offset, len } = slice(engine, req.hook, req.head);
  const pos = await activations(engine, req.positive, req.hook);
  const neg = await activations(engine, req.negative, req.hook);
  const vector = new Float32Array(len);
  const position = req.position ?? 'last';
  const pairs: [number, number][] = position === 'last'
    ? [[pos.ids.length - 1, neg.ids.length - 1]]
    : Array.from({ length: Math.min(pos.ids.length, neg.ids.length) }, (_, t) => [t, t]);
  for (const [tp, tn] of pairs) {
    for (let i = 0; i < len; i++) vector[i] += (pos.rows[tp * width + offset + i] - neg.rows[tn * width + offset + i]) / pairs.length;
  }
  return {
    vector, hook: req.hook, dModel: len, modelId: engine.label,
    provenance: { method: 'actadd', position, positive: [req.positive], negative: [req.negative], ...(req.head !== undefined ? { head: req.head } : {}) },
  };
}

/**
 * The token index read for a text under a CAA position rule, and the text to encode.
 * @param turn the chat turn the text is rendered in (the marker's prefix is rendered in it too, so
 *   the first token after the shared rendering is the answer token).
 * @throws Error when the marker is missing, repeated, first, or last in the text.
 */
export function caaPosition(engine: Engine, text: string, position: CaaRequest['position'], turn: ChatTurn = {}): { prompt: string; index: (ids: number[]) => number } {
  if (position === undefined || position === 'last') return { prompt: text, index: (ids) => ids.length - 1 };
  const { marker } = position;
  const at = text.indexOf(marker);
  if (marker === '' || at < 0 || text.indexOf(marker, at + 1) >= 0) throw new Error(`"${text}": mark the answer token with exactly one "${marker}"`);
  const before = text.slice(0, at), after = text.slice(at + marker.length);
  if (before === '' || after === '') throw new Error(`"${text}": the marker needs text before it and the answer token after it`);
  const prefix = engine.encodePrompt(promptWith(before, turn));
  return {
    prompt: before + after,
    // First token not shared with the prefix's encoding: the answer token (or the token it merged into).
    index: (ids) => {
      let i = 0;
      while (i < prefix.length && i < ids.length && ids[i] === prefix[i]) i++;
      return Math.min(i, ids.length - 1);
    },
  };
}

/**
 * CAA / difference-of-means vector (Rimsky et al. 2024, arXiv 2312.06681):
 * v = mean_i a(x⁺_i) − mean_j a(x⁻_j), a(x) the hook's activation at the chosen token. With paired
 * sets this is Rimsky et al.'s mean of paired differences. Subtracting the dataset mean μ from every
 * activation ("mean-centring") leaves v unchanged; μ is returned for mean ablation and centring.
 * @returns vector and mean, each [width] (or [d_head] with head).
 * @throws Error for empty sets, an unknown or non-steerable hook, a bad head or a bad marker.
 */
export async function caaVector(engine: Engine, req: CaaRequest): Promise<CaaVector> {
  if (req.positive.length === 0 || req.negative.length === 0) throw new Error('CAA needs at least one positive and one negative text');
  const { width, offset, len } = slice(engine, req.hook, req.head);
  const meanPos = new Float64Array(len), meanNeg = new Float64Array(len);
  const total = req.positive.length + req.negative.length;
  let done = 0;
  for (const [texts, acc] of [[req.positive, meanPos], [req.negative, meanNeg]] as const) {
    for (const text of texts) {
      const { prompt, index } = caaPosition(engine, text, req.position, req.turn);
      const { ids, rows } = await activations(engine, prompt, req.hook, req.turn);
      const t = index(ids);
      for (let i = 0; i < len; i++) acc[i] += rows[t * width + offset + i] / texts.length;
      req.onProgress?.({ done: ++done, total });
    }
  }
  const vector = new Float32Array(len), mean = new Float32Array(len);
  const np = req.positive.length, nn = req.negative.length;
  for (let i = 0; i < len; i++) {
    vector[i] = meanPos[i] - meanNeg[i];
    mean[i] = (np * meanPos[i] + nn * meanNeg[i]) / (np + nn);
  }
  const position = req.position === undefined || req.position === 'last' ? 'last' : `marker:${req.position.marker}`;
  return {
    vector, mean, hook: req.hook, dModel: len, modelId: engine.label,
    provenance: { method: 'caa', position, positive: [...req.positive], negative: [...req.negative], ...(req.head !== undefined ? { head: req.head } : {}) },
  };
}
