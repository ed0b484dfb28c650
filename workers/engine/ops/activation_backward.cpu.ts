import type { Activation } from '../backend/backend';
import { activate, erf } from './activation.cpu';

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

/** act'(x), the derivative of activation.cpu.ts `activate` (float64). */
export function activateGrad(x: number, act: Activation): number {
  switch (act) {
    case 'silu': { const s = 1 / (1 + Math.exp(-x)); return s * (1 + x * (1 - s)); }
    case 'gelu': return 0.5 * (1 + erf(x / Math.SQRT2)) + (x * Math.exp(-0.5 * x * x)) / Math.sqrt(2 * Math.PI);
    case 'gelu_tanh': {
      const u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
      const t = Math.tanh(u);
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x);
    }
    case 'relu': return x > 0 ? 1 : 0;
    case 'sigmoid': { const s = 1 / (1 + Math.exp(-x)); return s * (1 - s); }
    case 'identity': return 1;
  }
}

/** dy·act'(x) elementwise (Backend.actBackward), into `out` (default a new array). */
export function actBackwardCpu(x: Float32Array, dy: Float32Array, act: Activation, out?: Float32Array): Float32Array {
  const y = out ?? new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = dy[i] * activateGrad(x[i], act);
  return y;
}

/** The input gradients of act(gate)·up (Backend.gatedActBackward): dGate = dy·up·act'(gate), dUp = dy·act(gate). */
export function gatedActBackwardCpu(gate: Float32Array, up: Float32Array, dy: Float32Array, act: Activation): { dGate: Float32Array; dUp: Float32Array } {
  const dGate = new Float32Array(gate.length), dUp = new Float32Array(gate.length);
  if (act === 'silu') {
    // SwiGLU, the common case: one exp per value, σ shared by silu(x) = x·σ and silu'(x) = σ·(1 + x·(1 − σ))
    for (let i = 0; i < gate.length; i++) {
      const x = gate[i], s = 1 / (1 + Math.exp(-x));
      dGate[i] = dy[i] * up[i] * s * (1 + x * (1 - s));
      dUp[i] = dy[i] * x * s;
    }
    return { dGate, dUp };
  }
  for (let i = 0; i < gate.length; i++) {
    dGate[i] = dy[i] * up[i] * activateGrad(gate[i], act);
    dUp[i] = dy[i] * activate(gate[i], act);
  }
  return { dGate, dUp };
}
