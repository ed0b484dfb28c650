/**
 * e^x in float64 by fdlibm's algorithm (FreeBSD msun e_exp.c, Sun Microsystems 1993; the code V8's
 * Math.exp runs, base/ieee754.cc), written out in TypeScript so a hot loop (SiLU over every MLP
 * activation) inlines it instead of calling into the runtime for each value. Error < 1 ulp.
 *
 * Reduction x = k·ln2 + r with |r| ≤ 0.5·ln2 (ln2 split in a 32-bit-exact high part and a low part),
 * e^r from a degree-5 Remez polynomial in r² (c = r − r²·P(r²); e^r = 1 − ((lo − r·c/(2 − c)) − hi)),
 * then scaled by 2^k. Arguments outside (−708.4, 709.7), NaN and |x| < 2⁻²⁸ go to Math.exp.
 */

const INV_LN2 = 1.44269504088896338700e+00;
const LN2_HI = 6.93147180369123816490e-01;
const LN2_LO = 1.90821492927058770002e-10;
const P1 = 1.66666666666666019037e-01;
const P2 = -2.77777777770155933842e-03;
const P3 = 6.61375632143793436117e-05;
const P4 = -1.65339022054652515390e-06;
const P5 = 4.13813679705723846039e-08;

/** 2^k for k in [−1022, 1023] at index k + 1022 (exact). */
const POW2 = Float64Array.from({ length: 2046 }, (_, i) => 2 ** (i - 1022));

/** e^x (float64; the value Math.exp gives where V8 runs fdlibm's exp). */
export function exp64(x: number): number {
  const ax = Math.abs(x);
  // |x| ≥ 708 (overflow, underflow and subnormal results), NaN, and |x| < 2⁻²⁸: the library
  if (!(ax < 708) || ax < 3.725290298461914e-9) return Math.exp(x);
  let hi: number, lo: number, k: number;
  if (ax > 0.34657359027997264) { // |x| > 0.5·ln2
    if (ax < 1.0397207708399179) { // |x| < 1.5·ln2
      if (x > 0) { hi = x - LN2_HI; lo = LN2_LO; k = 1; } else { hi = x + LN2_HI; lo = -LN2_LO; k = -1; }
    } else {
      k = (INV_LN2 * x + (x > 0 ? 0.5 : -0.5)) | 0;
      hi = x - k * LN2_HI;
      lo = k * LN2_LO;
    }
    x = hi - lo;
  } else {
    hi = 0; lo = 0; k = 0;
  }
  const t = x * x;
  const c = x - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
  if (k === 0) return 1 - ((x * c) / (c - 2) - x);
  return (1 - ((lo - (x * c) / (2 - c)) - hi)) * POW2[k + 1022];
}
