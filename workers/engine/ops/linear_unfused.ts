import type { Backend, LinearFusion, Tensor } from '../backend/backend';

/**
 * FusedOps.linear's result computed with the backend's separate ops: rmsNorm → linear (→ second
 * linear and gatedAct) → add. For weights the fused kernels do not read (block-quantised storage),
 * so the forward pass can ask for a fusion whatever the weights' storage. Same definition as
 * LinearFusion: y = epilogue(prologue(x)·wᵀ + bias).
 */
export function linearUnfused(b: Backend, x: Tensor, w: Tensor, bias: Tensor | undefined, f: LinearFusion): Tensor {
  const xn = f.norm ? b.rmsNorm(x, f.norm.w, f.norm.eps, f.norm.offset) : x;
  let y = b.linear(xn, w, bias);
  if (f.gateUp) {
    const up = b.linear(xn, f.gateUp.w, f.gateUp.bias);
    const gated = b.gatedAct(y, up, f.gateUp.act);
    b.release(y);
    b.release(up);
    y = gated;
  }
  if (xn !== x) b.release(xn);
  if (f.residual) {
    const sum = b.add(y, f.residual);
    b.release(y);
    y = sum;
  }
  return y;
}
