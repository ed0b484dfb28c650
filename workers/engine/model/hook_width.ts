import { assertHook, hookInfo } from './hooks';
import type { ModelSpec } from '../arch/spec';

/** Row width of a steerable hook and the symbol it is declared with in `HOOKS` (e.g. 'd_model'). */
export interface HookWidth {
  width: number;
  /** The width as HOOKS declares it: 'd_model', 'd_mlp', 'n_heads·d_head', 'n_kv_heads·d_head', 'n_experts' or 'k'. */
  symbol: string;
  /** Heads in the row when the hook is per head (attn.hook_q/k/v/z), else undefined. */
  heads?: number;
}

/**
 * Width of one row of a steerable hook [pos, width], read from the shape declared in `HOOKS`
 * (the single list of hook points), so a vector can be checked against it.
 * @throws Error for an unknown hook (assertHook's message) or a hook that is not [pos, width]
 *   (attention patterns, scores, logits cannot be steered by a row op).
 */
export function hookWidth(spec: ModelSpec, hook: string): HookWidth {
  assertHook(spec, hook);
  const info = hookInfo(hook)!;
  if (!info.steerable) throw new Error(`hook "${hook}" has shape ${info.shape}, not [pos, width]: it cannot be steered (steer a [pos, d_model] hook such as blocks.0.hook_resid_post)`);
  const symbol = /^\[pos, (.+)\]$/.exec(info.shape)?.[1];
  switch (symbol) {
    case 'd_model': return { width: spec.dModel, symbol };
    case 'd_mlp': return { width: spec.dMlp, symbol };
    case 'n_experts': if (spec.moe) return { width: spec.moe.nExperts, symbol }; break;
    case 'k': if (spec.moe) return { width: spec.moe.topK, symbol }; break;
    case 'n_heads·d_head': return { width: spec.nHeads * spec.dHead, symbol, heads: spec.nHeads };
    case 'n_kv_heads·d_head': return { width: spec.nKvHeads * spec.dHead, symbol, heads: spec.nKvHeads };
  }
  throw new Error(`hook "${hook}": its declared shape ${info.shape} has no known row width`);
}
