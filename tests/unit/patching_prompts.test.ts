import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as path from 'node:path';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { checkRecoveryDenominator } from '../../workers/engine/analysis/recovery_denominator';
import { EXAMPLE_PAIR, KNOWN_CORRUPTIONS, followingPair, pairFor, promptMismatch } from '../../app/lib/patching_prompts';
import { useStore } from '../../app/store';
import { followExperimentPrompt, pickExamplePair } from '../../app/actions/patching';
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

describe('the Patching view starts from the experiment’s prompt, not README’s pair (actions/patching.ts)', () => {
  const s = () => useStore.getState();
  beforeEach(() => useStore.setState({ prompt: DEFAULT_PROMPT, patchingSettings: { ...s().patchingSettings, clean: DEFAULT_PROMPT, corrupt: DEFAULT_CORRUPT }, patchingFollowsPrompt: true }));

  it('an experiment loaded with another prompt becomes the clean prompt; the corrupted one starts as a copy to edit', () => {
    s().setPrompt('Once upon a time, there was a little dog');
    expect(followExperimentPrompt()).toBe(true);
    expect(s().patchingSettings).toMatchObject({ clean: 'Once upon a time, there was a little dog', corrupt: 'Once upon a time, there was a little dog' });
    expect(followingPair('Once upon a time, there was a little dog').corruptNeeded).toBe(true);
    // the default prompt keeps its known corruption (README's pair)
    s().setPrompt(DEFAULT_PROMPT);
    expect(followExperimentPrompt()).toBe(true);
    expect(s().patchingSettings).toMatchObject({ clean: DEFAULT_PROMPT, corrupt: DEFAULT_CORRUPT });
  });

  it('a pair the user edited, or the corrupted prompt made the experiment’s by opening a patch cell, is kept', () => {
    s().setPrompt(DEFAULT_CORRUPT);
    expect(followExperimentPrompt()).toBe(false);
    expect(s().patchingSettings.clean).toBe(DEFAULT_PROMPT);
    s().setPatchingFollowsPrompt(false);
    s().setPrompt('The little girl felt very');
    expect(followExperimentPrompt()).toBe(false);
    expect(s().patchingSettings).toMatchObject({ clean: DEFAULT_PROMPT, corrupt: DEFAULT_CORRUPT });
  });

  it('README’s example stays one click away, and picking it stops the following', () => {
    s().setPrompt('The little girl felt very');
    followExperimentPrompt();
    pickExamplePair();
    expect(s().patchingSettings).toMatchObject({ clean: EXAMPLE_PAIR.clean, corrupt: EXAMPLE_PAIR.corrupt });
    expect(EXAMPLE_PAIR).toEqual({ clean: DEFAULT_PROMPT, corrupt: DEFAULT_CORRUPT });
    expect(s().patchingFollowsPrompt).toBe(false);
    expect(followExperimentPrompt()).toBe(false);
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
