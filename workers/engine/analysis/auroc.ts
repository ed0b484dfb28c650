/**
 * Area under the ROC curve of scores for binary labels, as the Mann–Whitney statistic:
 * AUROC = P(score of a random positive > score of a random negative) + ½·P(tie)
 * (Hanley & McNeil 1982), computed from mid-ranks in O(n log n).
 * @param scores [n]; labels [n] in {0, 1} (1 = positive).
 * @returns a number in [0, 1]; 0.5 for uninformative scores.
 * @throws Error when either class is empty or the sizes differ.
 */
export function auroc(scores: ArrayLike<number>, labels: ArrayLike<number>): number {
  const n = scores.length;
  if (labels.length !== n) throw new Error(`auroc: ${n} scores but ${labels.length} labels`);
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => scores[a] - scores[b]);
  let rankSumPos = 0, nPos = 0;
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && scores[order[j + 1]] === scores[order[i]]) j++;
    const midRank = (i + j) / 2 + 1; // ranks are 1-based
    for (let q = i; q <= j; q++) if (labels[order[q]] === 1) { rankSumPos += midRank; nPos++; }
    i = j + 1;
  }
  const nNeg = n - nPos;
  if (nPos === 0 || nNeg === 0) throw new Error(`auroc needs both classes (got ${nPos} positive, ${nNeg} negative)`);
  return (rankSumPos - (nPos * (nPos + 1)) / 2) / (nPos * nNeg);
}
