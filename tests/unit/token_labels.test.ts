import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { memory, modelFiles } from '../hardening/model_variants';
import { byteLabel, tokenLabels } from '../../app/lib/token_labels';

/**
 * Issue #8 fault 7: token pieces join back to the text, and the token strip shows byte-fallback
 * tokens that are not characters by themselves as their bytes. stories260K (SentencePiece with
 * byte_fallback) has no piece for "❤" (U+2764 = E2 9D A4 in UTF-8): it is three byte tokens.
 */
let e: Engine;
beforeAll(async () => { e = await Engine.load(memory(modelFiles()), new CpuBackend()); });
afterAll(() => e.dispose());

const idOfByte = (b: number) => Number(Object.entries(e.info().byteTokens).find(([, v]) => v === b)![0]);

describe('byte tokens', () => {
  it('the model info lists the 256 byte tokens <0x00>…<0xFF>', () => {
    const bt = e.info().byteTokens;
    expect(Object.keys(bt)).toHaveLength(256);
    expect(new Set(Object.values(bt)).size).toBe(256);
  });

  it('"I ❤ you": the three bytes of ❤ are held until the character completes; pieces join to the text; the strip shows <0xE2> <0x9D> ❤', () => {
    const ids = e.encodePrompt({ prompt: 'I ❤ you' });
    const heart = [0xe2, 0x9d, 0xa4].map(idOfByte);
    const at = ids.findIndex((id, i) => id === heart[0] && ids[i + 1] === heart[1] && ids[i + 2] === heart[2]);
    expect(at, 'byte tokens of ❤ in the prompt').toBeGreaterThan(0);
    const pieces = e.tokenStrings(ids);
    expect(pieces.join('')).toBe(e.tokenizer.decode(ids, { skip_special_tokens: false }));
    expect(pieces.slice(at, at + 3)).toEqual(['', '', '❤']);
    const { labels, isByte } = tokenLabels(pieces, ids, e.info().byteTokens);
    expect(labels.slice(at, at + 3)).toEqual(['<0xE2>', '<0x9D>', '❤']);
    expect(isByte.slice(at, at + 3)).toEqual([true, true, false]);
    expect(labels.slice(at + 3).join('')).toBe(' you');
  });

  it('a lone byte (0xE2 then " you") is shown as <0xE2>, while the pieces still join to the decoded text with its U+FFFD', () => {
    const you = e.encodePrompt({ prompt: 'I you' }).slice(2); // ids of " you" after "I"
    const ids = [idOfByte(0xe2), ...you];
    const prefix = e.encodePrompt({ prompt: 'I' });
    const pieces = e.tokenStrings(ids, prefix);
    const head = e.tokenizer.decode(prefix, { skip_special_tokens: false });
    expect(head + pieces.join('')).toBe(e.tokenizer.decode([...prefix, ...ids], { skip_special_tokens: false }));
    expect(pieces[0]).toBe('');
    expect(pieces[1].startsWith('\uFFFD')).toBe(true);
    const { labels } = tokenLabels(pieces, ids, e.info().byteTokens);
    expect(labels[0]).toBe('<0xE2>');
    expect(labels.join('')).toBe('<0xE2> you');
  });

  it('without byte tokens the labels are the pieces', () => {
    expect(tokenLabels(['a', '', '\uFFFDb'], [5, 6, 7], undefined).labels).toEqual(['a', '', '\uFFFDb']);
    expect(byteLabel(0x0a)).toBe('<0x0A>');
  });
});
