/**
 * An SAE at its hook inside the forward pass: the hook points it adds (SAELens `HookedSAE` names,
 * fired as `<hook>.<name>` the way `HookedSAETransformer` names them, e.g.
 * `blocks.2.hook_resid_post.hook_sae_acts_post`), splicing (the model continues with x̂ instead of
 * x), and the feature clamp intervention.
 */
import type { Backend, Tensor } from '../backend/backend';

/**
 * What the forward pass needs of a sparse autoencoder attached at a hook: its hook and width, and
 * encode/decode on device tensors. sae/sae.ts `Sae` is the implementation; the model floor names
 * only this shape, so it does not import the SAE folder.
 */
export interface SaeModule {
  readonly cfg: { readonly hookName: string; readonly dIn: number };
  /** x [n, d_in] → hidden_pre and feature activations, both [n, d_sae]. */
  encode(x: Tensor): { pre: Tensor; acts: Tensor };
  /** f [n, d_sae] → x̂ = f W_dec + b_dec [n, d_in]. */
  decode(acts: Tensor): Tensor;
  /** W_dec[f] [d_in]. */
  decoderRow(f: number): Float32Array;
}

/** The hook points of an attached SAE: name, shape (no batch), meaning. */
export const SAE_HOOKS = [
  { name: 'hook_sae_input', shape: '[pos, d_in]', meaning: 'the activation x the SAE reads (after the hook\'s interventions)' },
  { name: 'hook_sae_acts_pre', shape: '[pos, d_sae]', meaning: 'hidden_pre = (x − b_dec·[apply_b_dec_to_input]) W_enc + b_enc' },
  { name: 'hook_sae_acts_post', shape: '[pos, d_sae]', meaning: 'feature activations f (ReLU, JumpReLU or TopK of hidden_pre)' },
  { name: 'hook_sae_recons', shape: '[pos, d_in]', meaning: 'reconstruction x̂ = f W_dec + b_dec' },
  { name: 'hook_sae_error', shape: '[pos, d_in]', meaning: 'error term x − x̂' },
] as const;

export type SaeHookName = (typeof SAE_HOOKS)[number]['name'];

/** An SAE attached to a run at its cfg.hookName. */
export interface SaeAttachment {
  sae: SaeModule;
  /** Replace the activation by the reconstruction x̂ (the model then runs on the SAE's output, without the error term). */
  splice?: boolean;
}

/** The concrete names of an SAE's hooks at `hook`, in SAE_HOOKS order. */
export function saeHookNames(hook: string): string[] {
  return SAE_HOOKS.map((h) => `${hook}.${h.name}`);
}

/** Splits "blocks.2.hook_resid_post.hook_sae_acts_post" into the model hook and the SAE hook; null for other names. */
export function splitSaeHook(name: string): { hook: string; sub: SaeHookName } | null {
  const m = /^(.+)\.(hook_sae_\w+)$/.exec(name);
  if (!m || !SAE_HOOKS.some((h) => h.name === m[2])) return null;
  return { hook: m[1], sub: m[2] as SaeHookName };
}

/**
 * Runs the attached SAE on x (ownership of x passes in), fires its hooks into `store` when `wants`
 * asks for them, and returns what the forward pass continues with: x̂ when spliced, else x.
 * Encodes only when a hook of the SAE is captured or the SAE is spliced.
 */
export function fireSae(b: Backend, att: SaeAttachment, x: Tensor, wants: (name: string) => boolean, store: (name: string, t: Tensor) => void): Tensor {
  const hook = att.sae.cfg.hookName;
  const want = (sub: SaeHookName) => wants(`${hook}.${sub}`);
  const need = att.splice || SAE_HOOKS.some((h) => want(h.name));
  if (!need) return x;
  if (want('hook_sae_input')) store(`${hook}.hook_sae_input`, b.clone(x));
  const { pre, acts } = att.sae.encode(x);
  if (want('hook_sae_acts_pre')) store(`${hook}.hook_sae_acts_pre`, pre); else b.release(pre);
  const recons = att.sae.decode(acts);
  if (want('hook_sae_acts_post')) store(`${hook}.hook_sae_acts_post`, acts); else b.release(acts);
  if (want('hook_sae_error')) store(`${hook}.hook_sae_error`, b.sub(x, recons));
  if (want('hook_sae_recons')) store(`${hook}.hook_sae_recons`, b.clone(recons));
  if (att.splice) {
    b.release(x);
    return recons;
  }
  b.release(recons);
  return x;
}

/**
 * Clamp feature `feature` of an SAE to `value` at its hook, keeping the SAE's error term:
 * x' = x + (c − f_feature(x))·W_dec[feature] (x − x̂ is unchanged, x̂ has f_feature = c).
 * With c = 0 this is the feature ablation of attribution studies (Marks et al. 2024, arXiv 2403.19647).
 */
export interface SaeClampOp { kind: 'sae_clamp'; sae: SaeModule; feature: number; value: number }

/**
 * Applies an SAE clamp to the rows of x [n, d_in] where rows[r] = 1 (others pass unchanged) →
 * new tensor; x is not consumed. The activation f_feature(x) comes from a full encode (TopK needs
 * the whole row).
 */
export function saeClamp(b: Backend, op: SaeClampOp, x: Tensor, rows: Uint8Array): Tensor {
  const { sae, feature, value } = op;
  const { pre, acts } = sae.encode(x);
  b.release(pre);
  const f = b.gatherCols(acts, Int32Array.of(feature)); // [n, 1]
  b.release(acts);
  // coef = c − f as a 1×1 linear map (weight −1, bias c); delta = coef ⊗ W_dec[feature] as a d_in×1 one.
  const negOne = b.upload(Float32Array.of(-1), [1, 1]), c = b.upload(Float32Array.of(value), [1]);
  const coef = b.linear(f, negOne, c);
  const dir = b.upload(sae.decoderRow(feature), [sae.cfg.dIn, 1]);
  const delta = b.linear(coef, dir);
  const y = b.add(x, delta);
  for (const t of [f, negOne, c, coef, dir, delta]) b.release(t);
  return pickRows(b, x, y, rows);
}

/**
 * Rows of y where rows[r] = 1 and of x elsewhere → a tensor the caller owns. Consumes y (it is
 * returned itself when every row is picked); x is left to the caller.
 */
export function pickRows(b: Backend, x: Tensor, y: Tensor, rows: Uint8Array): Tensor {
  if (rows.every((r) => r)) return y;
  const parts: Tensor[] = [];
  for (let r = 0; r < rows.length;) {
    let e = r;
    while (e < rows.length && rows[e] === rows[r]) e++;
    parts.push(b.sliceRows(rows[r] ? y : x, r, e - r));
    r = e;
  }
  const out = b.concatRows(parts);
  for (const p of parts) b.release(p);
  b.release(y);
  return out;
}
