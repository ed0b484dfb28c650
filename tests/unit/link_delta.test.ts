import { describe, expect, it } from 'vitest';
import QRCode from 'qrcode';
import { experimentFromHash, experimentHash } from '../../app/lib/experiment_state';
import { applyLinkDelta, LINK_BASE, linkDelta } from '../../app/lib/link_delta';
import { readExperiment, type Experiment } from '../../workers/engine/experiment';

const ORIGIN = 'https://lab.github.io/branchpoint/';
const base = (): Experiment => readExperiment(JSON.stringify(LINK_BASE));
const modules = (url: string) => QRCode.create(url, { errorCorrectionLevel: 'L' }).modules.size;

describe('the poster QR code\'s short link (#q=: the experiment as its difference from a frozen base)', () => {
  it('the base is an experiment the app reads as it is', () => {
    expect(base()).toEqual(LINK_BASE);
  });

  it('round-trips an edited experiment exactly, nested objects, arrays, nulls and removed keys included', () => {
    const e = base() as unknown as Record<string, unknown>;
    const edited = { ...e, prompt: 'The little girl felt very', good: { mode: 'text', value: ' happy' }, model: { kind: 'hub', repo: 'HuggingFaceTB/SmolLM2-135M', revision: 'main' },
      view: { ...(e.view as object), name: 'patching', selection: { start: 2, end: 4 } }, generation: { maxNewTokens: 8, temperature: 0.7, topK: 40, seed: 3 } };
    delete (edited as Record<string, unknown>).saes;
    expect(applyLinkDelta(LINK_BASE, linkDelta(LINK_BASE, edited))).toEqual(edited);
    const withPrompt = { ...base(), prompt: 'Once upon a time' } as Experiment;
    expect(experimentFromHash(experimentHash(withPrompt, { short: true }).hash)).toEqual(withPrompt);
  });

  it('is several times shorter than the full link, so slide 1\'s code is sparse (trials: 87 modules, too dense from a poster\'s distance)', () => {
    for (const e of [base(), { ...base(), prompt: 'The little girl saw a dog. Then', good: { mode: 'text' as const, value: ' she' }, bad: { mode: 'text' as const, value: ' he' } }]) {
      const full = ORIGIN + experimentHash(e).hash, short = ORIGIN + experimentHash(e, { short: true }).hash;
      expect(short.length * 3, `${short.length} vs ${full.length}`).toBeLessThan(full.length);
      expect(modules(short)).toBeLessThanOrEqual(49); // version ≤ 8, against 85+ for the full link
      expect(modules(full)).toBeGreaterThan(60);
    }
  });

  it('a damaged short link says so', () => {
    expect(() => experimentFromHash('#q=not-lz')).toThrow(/damaged/);
  });
});
