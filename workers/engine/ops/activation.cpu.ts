import type { Activation } from '../backend/backend';
import { exp64 } from './exp64';

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

/** erf(x) from the Chebyshev fit of erfc in Numerical Recipes §6.2 (fractional error < 1.2e-7). */
export function erf(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? 1 - r : r - 1;
}

/** Scalar activation. gelu: x·Φ(x) (exact, erf); gelu_tanh: HF gelu_new / gelu_pytorch_tanh. */
export function activate(x: number, act: Activation): number {
  switch (act) {
    case 'silu': return x / (1 + exp64(-x)); // exp64: Math.exp's value, inlined
    case 'gelu': return 0.5 * x * (1 + erf(x / Math.SQRT2));
    case 'gelu_tanh': return 0.5 * x * (1 + Math.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));
    case 'relu': return x > 0 ? x : 0;
    case 'sigmoid': return 1 / (1 + exp64(-x));
    case 'identity': return x;
  }
}

/** act(x) elementwise, into `out` (default a new array). */
export function actCpu(x: Float32Array, act: Activation, out?: Float32Array): Float32Array {
  const y = out ?? new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = activate(x[i], act);
  return y;
}

/** act(gate)·up elementwise (gated MLP), into `out` (default a new array). */
export function gatedActCpu(gate: Float32Array, up: Float32Array, act: Activation, out?: Float32Array): Float32Array {
  const y = out ?? new Float32Array(gate.length);
  for (let i = 0; i < gate.length; i++) y[i] = activate(gate[i], act) * up[i];
  return y;
}
