import type { Backend, RowOp, Tensor } from '../backend/backend';
import { activeAtStep, selectRows, type CallSite, type Intervention } from './intervention';
import { fireSae, saeClamp, type SaeAttachment } from './sae_site';

/**
 * What happens at each hook point during one forward call: interventions are applied (in list
 * order), then the value is captured if the name filter asks for it, then an SAE attached at the
 * hook fires its own hooks (`<hook>.hook_sae_acts_post`, …) and, when spliced, replaces the value
 * by its reconstruction. Captured tensors are copies owned by this context, so the forward pass
 * can free its intermediates.
 */
export class RunContext {
  readonly captured = new Map<string, Tensor>();
  /**
   * Values the forward makes that no hook exposes, held for the backward (model/backward.ts) when
   * `holdInternal` names them: `blocks.{l}.mlp.up`, the gated MLP's up projection W_up·ln2(·)
   * [pos, d_mlp]. Not hook points (no intervention, capture or SAE reaches them); owned by this
   * context, freed by release().
   */
  readonly internal = new Map<string, Tensor>();
  /** Which internal values hold() keeps (default none: the forward frees them). */
  holdInternal: (name: string) => boolean = () => false;
  private readonly byHook = new Map<string, Intervention[]>();
  private readonly saes = new Map<string, SaeAttachment>();

  constructor(
    private readonly backend: Backend,
    readonly site: CallSite,
    private readonly capture: (name: string) => boolean = () => false,
    interventions: readonly Intervention[] = [],
    saes: readonly SaeAttachment[] = [],
  ) {
    for (const a of saes) this.saes.set(a.sae.cfg.hookName, a);
    for (const iv of interventions) {
      if (!activeAtStep(iv, site.step)) continue;
      const list = this.byHook.get(iv.hook) ?? [];
      list.push(iv);
      this.byHook.set(iv.hook, list);
    }
  }

  /** True when hook `name` is being captured (lets the forward skip optional outputs such as patterns). */
  wants(name: string): boolean {
    return this.capture(name);
  }

  /**
   * True when hook `name` is captured, has an intervention active in this call or an SAE attached:
   * the forward pass must then materialise the hook's value (no fused kernel may skip over it).
   */
  touches(name: string): boolean {
    return this.capture(name) || this.byHook.has(name) || this.saes.has(name);
  }

  /**
   * Fires hook `name` on t (rows = positions pos0..pos0+n-1 for row hooks). Takes ownership of t
   * and returns the tensor the forward pass continues with.
   */
  fire(name: string, t: Tensor): Tensor {
    for (const iv of this.byHook.get(name) ?? []) {
      const rows = selectRows(iv.positions, this.site);
      const op = iv.op.kind === 'sae_clamp' ? iv.op : this.opForCall(iv.op, t, rows);
      if (!rows.some((r) => r)) continue;
      const next = op.kind === 'sae_clamp' ? saeClamp(this.backend, op, t, rows) : this.backend.rowOp(t, op, rows, iv.groups);
      this.backend.release(t);
      t = next;
    }
    if (this.capture(name)) this.captured.set(name, this.backend.clone(t));
    const sae = this.saes.get(name);
    if (sae) t = fireSae(this.backend, sae, t, this.capture, (n, v) => this.captured.set(n, v));
    return t;
  }

  /**
   * A patch source holds the positions of another run (a prompt of the same length); this call
   * needs rows pos0..pos0+n-1. Rows past the source's end (teacher-forced branch tokens after the
   * prompt) have no source value: they are left unpatched (cleared in `rows`).
   */
  private opForCall(op: RowOp, t: Tensor, rows: Uint8Array): RowOp {
    if (op.kind !== 'patch') return op;
    const w = t.shape[t.shape.length - 1];
    const { pos0, n } = this.site;
    const covered = Math.max(0, Math.min(n, op.replacement.length / w - pos0));
    rows.fill(0, covered);
    if (covered === n) return { kind: 'patch', replacement: op.replacement.subarray(pos0 * w, (pos0 + n) * w) };
    const replacement = new Float32Array(n * w);
    if (covered > 0) replacement.set(op.replacement.subarray(pos0 * w, (pos0 + covered) * w));
    return { kind: 'patch', replacement };
  }

  /**
   * Takes ownership of the internal value t when holdInternal(name) (kept in `internal`).
   * @returns whether it did: when false the caller still owns t and frees it.
   */
  hold(name: string, t: Tensor): boolean {
    if (!this.holdInternal(name)) return false;
    const old = this.internal.get(name);
    if (old) this.backend.release(old);
    this.internal.set(name, t);
    return true;
  }

  /** Frees every captured and held tensor. */
  release(): void {
    for (const t of this.captured.values()) this.backend.release(t);
    for (const t of this.internal.values()) this.backend.release(t);
    this.captured.clear();
    this.internal.clear();
  }
}
