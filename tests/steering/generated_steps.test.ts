import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { resolveInterventions } from '../../workers/engine/studies/resolve_interventions';
import { toIntervention, type InterventionSpec } from '../../workers/engine/steering/spec';
import { sharedPath } from '../shared';

/**
 * DESIGN.md §2 semantics: "generated" positions start at n_prompt − 1 (the position that predicts
 * the first new token); teacher-forced branch tokens carry generation steps 1, 2, …; a patch works
 * with multi-token futures and refuses a source of another length.
 */
let e: Engine;
const PROMPT = 'The little girl felt very';
const v = Array.from({ length: 64 }, (_, i) => Math.cos(1.3 * i) / 2);
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
});
afterAll(() => e.dispose());

const iv = (spec: Partial<InterventionSpec>, nPrompt: number, maxNewTokens?: number) =>
  toIntervention({ hook: 'blocks.2.hook_resid_post', type: 'add', vector: v, alpha: 6, ...spec } as InterventionSpec, e.spec, { nPrompt, maxNewTokens });

describe('"generated" positions', () => {
  it('steer the first new token: the last prompt position is steered, earlier ones are not; {start: n_prompt} keeps the old meaning', async () => {
    const T = e.encodePrompt({ prompt: PROMPT }).length;
    const req = { prompt: PROMPT, good: { text: ' happy' }, bad: { text: ' sad' } };
    const plain = await e.analyse(req);
    const gen = await e.analyse({ ...req, interventions: [iv({ positions: 'generated' }, T)] });
    const narrow = await e.analyse({ ...req, interventions: [iv({ positions: { start: T, end: T + 8 } }, T + 8)] });
    expect(gen.finalMargin.subarray(0, T - 1)).toEqual(plain.finalMargin.subarray(0, T - 1));
    expect(gen.finalMargin[T - 1]).not.toBe(plain.finalMargin[T - 1]);
    expect(narrow.finalMargin).toEqual(plain.finalMargin);
    // The first generated token's margin is the steered final margin of the analysis.
    const g = await e.generate({ ...req, maxNewTokens: 3, interventions: [iv({ positions: 'generated' }, T, 3)] });
    expect(g.margins[0]).toBeCloseTo(gen.finalMargin[T - 1], 5);
    const gNarrow = await e.generate({ ...req, maxNewTokens: 3, interventions: [iv({ positions: { start: T, end: T + 3 } }, T, 3)] });
    expect(gNarrow.margins[0]).toBeCloseTo(plain.finalMargin[T - 1], 5);
  });
});

describe('teacher-forced branch tokens carry generation steps 1, 2, …', () => {
  it('the sequence margin of a greedy branch equals the summed log-probs of the same tokens generated under the same step window', async () => {
    const T = e.encodePrompt({ prompt: PROMPT }).length;
    for (const steps of [{ start: 1, end: 2 }, { start: 2 }, { start: 0, end: 1 }]) {
      const g = await e.generate({ prompt: PROMPT, good: { ids: [[0]] }, bad: { ids: [[0]] }, maxNewTokens: 4, stopAtEos: false, interventions: [iv({ positions: 'generated', steps }, T, 4)] });
      const logProbs: number[] = [];
      await e.generate({ prompt: PROMPT, good: { ids: [[0]] }, bad: { ids: [[0]] }, maxNewTokens: 4, stopAtEos: false, interventions: [iv({ positions: 'generated', steps }, T, 4)] }, (t) => logProbs.push(t.logProb));
      // Analyse the generated branch against a one-token future under the same intervention:
      // sequence − first-token margin = Σ_{k≥1} log p(token k), drawn at steps 1, 2, 3.
      const bad = g.ids[0] === 300 ? 301 : 300;
      const a = await e.analyse({ prompt: PROMPT, good: { ids: [g.ids] }, bad: { ids: [[bad]] }, interventions: [iv({ positions: 'generated', steps }, T, 4)] });
      const rest = logProbs.slice(1).reduce((s, x) => s + x, 0);
      expect(a.sequenceMargin - a.finalMargin[T - 1], `steps ${JSON.stringify(steps)}`).toBeCloseTo(rest, 4);
    }
  });
});

describe('patch with multi-token futures and source lengths', () => {
  const clean = 'Lily and Tom went to the park. Lily gave the ball to';
  const corrupt = 'Tom and Lily went to the park. Lily gave the ball to'; // the names swapped: 21 tokens each (" Tom" is two)
  it('a prompt patch leaves teacher-forced branch positions alone (no "source covers" error) and equals the source run there where it covers', async () => {
    const T = e.encodePrompt({ prompt: clean }).length;
    const run = { nPrompt: T };
    const [patch] = await resolveInterventions(e, [{ hook: 'blocks.4.hook_resid_post', type: 'patch', source: corrupt }], run);
    const req = { prompt: clean, good: { text: ' Tom went' }, bad: { text: ' Lily' }, interventions: [patch] };
    const a = await e.analyse(req);
    const src = await e.analyse({ ...req, prompt: corrupt, interventions: [] });
    // Patching the last block's output at every prompt position gives the source's final margins.
    expect(Array.from(a.finalMargin)).toEqual(Array.from(src.finalMargin));
    expect(Number.isFinite(a.sequenceMargin)).toBe(true);
  });

  it('refuses a source prompt of another token length, naming both lengths', async () => {
    const T = e.encodePrompt({ prompt: clean }).length;
    const short = 'Lily gave the ball to';
    const n = e.encodePrompt({ prompt: short }).length;
    await expect(resolveInterventions(e, [{ hook: 'blocks.1.hook_resid_pre', type: 'patch', source: short }], { nPrompt: T }))
      .rejects.toThrow(`has ${n} tokens but the prompt has ${T}`);
  });
});
