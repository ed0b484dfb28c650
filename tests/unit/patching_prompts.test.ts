import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as path from 'node:path';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { checkRecoveryDenominator } from '../../workers/engine/analysis/recovery_denominator';
import { KNOWN_CORRUPTIONS, pairFor, promptMismatch } from '../../app/lib/patching_prompts';
import { DEFAULT_PROMPT } from '../../app/store/experiment';
import { DEFAULT_CORRUPT } from '../../app/store/patching';

describe('the report’s prompts follow the experiment (lib/patching_prompts.ts)', () => {
  it('names a mismatch when the experiment’s prompt is neither the clean nor the corrupted prompt', () => {
    // "Use its prompt and futures" (happy/sad) after the default Lily/Tom pair.
    expect(promptMismatch('The little girl felt very', DEFAULT_PROMPT, DEFAULT_CORRUPT)).toEqual({ experiment: 'The little girl felt very', clean: DEFAULT_PROMPT, corrupt: DEFAULT_CORRUPT });
    expect(promptMismatch(DEFAULT_PROMPT, DEFAULT_PROMPT, DEFAULT_CORRUPT)).toBeNull();
    // After opening a patch cell the experiment's prompt is the patched (corrupted) run's: no mismatch.
    expect(promptMismatch(DEFAULT_CORRUPT, DEFAULT_PROMPT, DEFAULT_CORRUPT)).toBeNull();
    expect(promptMismatch('  ', DEFAULT_PROMPT, DEFAULT_CORRUPT)).toBeNull();
  });

  it('the fix makes the experiment’s prompt the clean one, with its known corruption or a corrupted prompt still to write', () => {
    expect(pairFor(DEFAULT_PROMPT, { corrupt: 'x' })).toEqual({ clean: DEFAULT_PROMPT, corrupt: DEFAULT_CORRUPT, corruptNeeded: false });
    expect(pairFor('The little girl felt very', { corrupt: DEFAULT_CORRUPT })).toEqual({ clean: 'The little girl felt very', corrupt: DEFAULT_CORRUPT, corruptNeeded: true });
  });
});

describe('the default patching pair on the bundled stories260K', () => {
  let e: Engine;
  beforeAll(async () => { e = await Engine.load(new NodeFiles(path.join(__dirname, '..', '..', 'public', 'models', 'stories260K')), new CpuBackend()); });
  afterAll(() => e?.dispose());

  it('every known corruption has its clean prompt’s token length and a recovery denominator above the warning threshold', async () => {
    const futures = { good: { text: ' Tom' }, bad: { text: ' Lily' } };
    for (const [clean, corrupt] of Object.entries(KNOWN_CORRUPTIONS)) {
      const a = await e.analyse({ prompt: clean, ...futures }), b = await e.analyse({ prompt: corrupt, ...futures });
      expect(b.finalMargin.length, `"${corrupt}" has the token length of "${clean}"`).toBe(a.finalMargin.length);
      const c = checkRecoveryDenominator(a.finalMargin[a.finalMargin.length - 1], b.finalMargin[b.finalMargin.length - 1]);
      expect(c.small, `Δ_clean − Δ_corrupt = ${c.denominator}`).toBe(false);
    }
  });
});
