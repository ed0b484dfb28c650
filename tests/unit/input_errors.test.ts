import { describe, expect, it } from 'vitest';
import { futureError, isPromptError, errorPlace } from '../../app/lib/input_errors';
import { contextMessage } from '../../workers/engine/model/transformer';

// The engine's own wording (engine.ts), so a change of wording there fails here.
const TOO_LONG = `the prompt: ${contextMessage(842, 512, 512)}; shorten it`;

describe('a too-long prompt is named once (trials saw it in the banner, under the prompt and under both futures)', () => {
  it('recognises the engine\'s prompt errors and nothing else', () => {
    expect(isPromptError(TOO_LONG)).toBe(true);
    expect(isPromptError('" Tom|" has an empty alternative')).toBe(false);
    expect(isPromptError('non-finite logits at blocks.2.hook_resid_post, token 3')).toBe(false);
  });

  it('the futures never repeat it; their own errors still show', () => {
    expect(futureError(TOO_LONG)).toBeNull();
    expect(futureError('token id 99999 is outside the vocabulary')).toBe('token id 99999 is outside the vocabulary');
  });

  it('under the prompt while typing; in the banner (only) once Analyse or Generate failed with it; under the prompt again when the banner is closed', () => {
    expect(errorPlace(TOO_LONG, null)).toBe('note');
    expect(errorPlace(TOO_LONG, TOO_LONG)).toBe('banner');
    expect(errorPlace(TOO_LONG, 'another job failed')).toBe('note');
    expect(errorPlace(null, TOO_LONG)).toBeNull();
  });
});
