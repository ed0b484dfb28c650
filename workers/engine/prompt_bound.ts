/**
 * How many characters one token can cover, read from tokenizer.json, so the prompt codec refuses a
 * prompt that cannot fit the context by its length alone — before tokenising it (a 10 MB prompt
 * used to be tokenised for a minute before the context check).
 *
 * The rule, and why it is sound: every token the tokenizer emits stands for at most L characters
 * of the text it read, where L is the longest piece in the vocabulary or the added tokens (UTF-16
 * code units, as JavaScript counts `string.length`). That holds for
 * - byte-level BPE (GPT-2, Llama 3, Qwen): a piece of k characters is k bytes, and k UTF-8 bytes
 *   are at most k UTF-16 code units;
 * - SentencePiece-style BPE / Unigram with byte fallback (Llama 2, Mistral, Gemma, Phi-3): a piece
 *   is the text it covers with " " written "▁" (one for one); an unknown character becomes byte
 *   tokens ("<0xE2>", 6 characters ≥ the 1 code unit each covers);
 * - BPE with an unknown token that is not fused: one unknown character (≤ 2 code units) per token;
 * provided the normalizer does not shrink the text: NFC / NFKC compose at most 4 code units into one
 * character (the longest canonical decomposition is 4 code points; a compatibility mapping of an
 * astral character halves at most), so they multiply L by 4; a string Replace multiplies it by
 * pattern / content length. Therefore tokens ≥ characters / L, and a prompt of more than
 * context × L characters cannot fit — refusing it is never wrong.
 *
 * Where no such L exists — a fused unknown token without byte fallback (a run of unknown
 * characters of any length is one token), a WordPiece model, a normalizer or pre-tokenizer that
 * deletes text (Strip, StripAccents, BertNormalizer, Precompiled, a Replace to "", Whitespace
 * splitting, Split "Removed"), or anything this file does not know — `tokenCharBound` returns
 * null and only the fixed ceiling MAX_PROMPT_CHARS applies (a limit of the workbench, not a claim
 * about the token count).
 */

/** The most characters a prompt or future may have whatever the tokenizer (the chat template's rendering limit too). */
export const MAX_PROMPT_CHARS = 4_000_000;

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : null);

/** The factor a normalizer may shrink text by (1: never shrinks), or null when it can delete text. */
function normalizerFactor(n: unknown): number | null {
  const o = obj(n);
  if (!o) return 1; // none
  switch (o.type) {
    case 'Sequence': {
      let f = 1;
      for (const x of Array.isArray(o.normalizers) ? o.normalizers : []) {
        const g = normalizerFactor(x);
        if (g === null) return null;
        f *= g;
      }
      return f;
    }
    case 'NFD': case 'NFKD': case 'Lowercase': case 'Prepend': case 'Replace': {
      if (o.type !== 'Replace') return 1;
      const pattern = obj(o.pattern)?.String;
      const content = o.content;
      if (typeof pattern !== 'string' || typeof content !== 'string' || content.length === 0 || pattern.length === 0) return null;
      return Math.max(1, pattern.length / content.length);
    }
    case 'NFC': case 'NFKC':
      return 4;
    default:
      return null;
  }
}

/** Whether a pre-tokenizer keeps every character (it only splits). */
function preTokenizerKeeps(p: unknown): boolean {
  const o = obj(p);
  if (!o) return true;
  switch (o.type) {
    case 'Sequence':
      return (Array.isArray(o.pretokenizers) ? o.pretokenizers : []).every(preTokenizerKeeps);
    case 'ByteLevel': case 'Metaspace': case 'Digits': case 'Punctuation': case 'UnicodeScripts':
      return true;
    case 'Split':
      return o.behavior !== 'Removed';
    default:
      return false;
  }
}

function usesByteLevel(p: unknown): boolean {
  const o = obj(p);
  if (!o) return false;
  return o.type === 'ByteLevel' || (o.type === 'Sequence' && Array.isArray(o.pretokenizers) && o.pretokenizers.some(usesByteLevel));
}

/**
 * The most characters (UTF-16 code units) one token can cover for this tokenizer.json, or null when
 * the rule above gives no bound (see the file comment).
 */
export function tokenCharBound(tokenizerJson: unknown): number | null {
  const t = obj(tokenizerJson);
  const model = obj(t?.model);
  if (!t || !model) return null;
  const factor = normalizerFactor(t.normalizer);
  if (factor === null || !preTokenizerKeeps(t.pre_tokenizer)) return null;
  const byteFallback = model.byte_fallback === true;
  let longest = 0;
  if (model.type === 'BPE' || (model.type === undefined && obj(model.vocab) && 'merges' in model)) {
    const byteLevel = usesByteLevel(t.pre_tokenizer);
    const unk = typeof model.unk_token === 'string';
    if (!byteFallback && !byteLevel && !(unk && model.fuse_unk !== true)) return null;
    for (const piece of Object.keys(obj(model.vocab) ?? {})) longest = Math.max(longest, piece.length);
  } else if (model.type === 'Unigram') {
    if (!byteFallback) return null; // unknown runs are fused into one token
    for (const e of Array.isArray(model.vocab) ? model.vocab : []) if (Array.isArray(e) && typeof e[0] === 'string') longest = Math.max(longest, e[0].length);
  } else {
    return null; // WordPiece (a whole unknown word is one token), WordLevel, unknown models
  }
  for (const a of Array.isArray(t.added_tokens) ? t.added_tokens : []) {
    const c = obj(a)?.content;
    if (typeof c === 'string') longest = Math.max(longest, c.length);
  }
  if (longest === 0) return null;
  return Math.ceil(longest * factor);
}
