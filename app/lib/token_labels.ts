/**
 * What a token strip shows for each token (issue #8 fault 7): the token's piece of the text, except
 * for byte-fallback tokens ("<0xE2>") whose piece is not a character. The engine's pieces join back
 * to the decoded text — the bytes of a character split over tokens give '' until the token that
 * completes it, which carries the whole character; a byte that never completes one decodes to U+FFFD,
 * carried by the next piece — so a strip of pieces alone shows empty cells and stray "�". Here such
 * byte tokens are labelled with their byte, and the U+FFFD they caused is dropped from the next
 * label (the byte token before it shows what it stands for). Labels are for display only.
 */

/** "<0xE2>" for byte 0xE2. */
export const byteLabel = (b: number): string => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;

/**
 * @param pieces the engine's token strings (they join to the text); ids the token ids [same length];
 * @param byteTokens ModelInfo.byteTokens (id → byte), or undefined when the model has none.
 * @returns one label per token, and which of them are bytes shown as such.
 */
export function tokenLabels(pieces: readonly string[], ids: readonly number[], byteTokens: Readonly<Record<number, number>> | undefined): { labels: string[]; isByte: boolean[] } {
  const labels: string[] = [], isByte: boolean[] = [];
  let heldBytes = false;
  for (let i = 0; i < pieces.length; i++) {
    const p = pieces[i];
    const b = byteTokens?.[ids[i]];
    if (b !== undefined && (p === '' || /^\uFFFD+$/.test(p))) {
      labels.push(byteLabel(b));
      isByte.push(true);
      heldBytes = p === '';
      continue;
    }
    labels.push(heldBytes ? p.replace(/^\uFFFD+/, '') : p);
    isByte.push(false);
    heldBytes = false;
  }
  return { labels, isByte };
}
