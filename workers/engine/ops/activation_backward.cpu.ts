import type { Activation } from '../backend/backend';
import { erf } from './activation.cpu';

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
