import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { hookWidth } from '../../workers/engine/model/hook_width';
import type { InterventionDraft } from '../../app/store/steering';
import type { LibraryEntry } from '../../app/store/vectors';
import { specRequest, toSpec } from '../../app/lib/specs';
import { drawnUnderSteering, promptMarks, steeredPromptPositions } from '../../app/lib/steered';
import { hookDescription, hookOfLensRow, lensRowOf, steerableHooks, vectorWidth } from '../../app/lib/hooks';
import { parseIndexList, parseNumberList, parsePositionList } from '../../app/lib/lists';
import { firstDivergence } from '../../app/lib/divergence';
import { sharedPath } from '../shared';

/**
 * The steering UI's own logic against the engine it drives (stories260K, CPU): the specs it writes
 * pass the engine's validation unchanged, the widths it checks are the engine's, and the tokens it
 * marks as steered are the ones whose forward passes the engine steers.
 */
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); });
afterAll(() => e.dispose());

const PROMPT = 'The little girl felt very';
const vec = (d: number, id = 'v1'): LibraryEntry => ({
  id, name: 'test', vector: Float32Array.from({ length: d }, (_, i) => Math.cos(i)), dModel: d, hook: null, model: null,
  provenance: { method: 'file', position: 'unknown', positive: [], negative: [] }, createdAt: '2026-01-01T00:00:00Z',
});
const draft = (patch: Partial<InterventionDraft>): InterventionDraft => ({
  id: 1, enabled: true, hook: 'blocks.3.hook_resid_post', type: 'add', dose: 4, rotateBy: 'theta', mode: 'project',
  vectorId: 'v1', source: '', head: null, positions: 'all', steps: null, ...patch,
});

describe('specs written by the UI', () => {
  it('every intervention type passes parseSpec and toIntervention as written', () => {
    const lib = [vec(64), vec(8, 'h')];
    const drafts = [
      draft({ positions: { start: 2, end: 5 }, steps: { start: 1, end: 4 } }),
      draft({ type: 'add_norm_preserving', dose: -2 }),
      draft({ type: 'rotate', rotateBy: 't', dose: 0.5, positions: [0, 3] }),
      draft({ type: 'ablate', mode: 'zero', vectorId: null }),
      draft({ type: 'ablate', mode: 'project', positions: 'prompt' }),
      draft({ hook: 'blocks.1.attn.hook_z', head: 3, vectorId: 'h' }),
    ];
    const { specs, specLabels, applied } = specRequest(drafts, lib);
    expect(specLabels).toEqual(drafts.map((_, i) => `intervention #${i + 1}`));
    expect(applied.map((a) => a.n)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const s of specs) expect(() => toIntervention(parseSpec(s), e.spec, { nPrompt: 11, maxNewTokens: 8 })).not.toThrow();
    expect(specs[0]).toMatchObject({ alpha: 4, positions: { start: 2, end: 5 }, steps: { start: 1, end: 4 } });
    expect(specs[2]).toMatchObject({ type: 'rotate', t: 0.5 });
    expect(specs[3]).not.toHaveProperty('vector');
    expect(specs[5]).toMatchObject({ head: 3 });
  });

  it('disabled interventions are left out but keep their numbers; a missing vector is named by number', () => {
    const { specLabels } = specRequest([draft({ enabled: false }), draft({})], [vec(64)]);
    expect(specLabels).toEqual(['intervention #2']);
    expect(() => toSpec({ n: 2, draft: draft({ vectorId: null }) }, [])).toThrow('intervention #2: pick a vector');
    expect(() => toSpec({ n: 1, draft: draft({ vectorId: 'gone' }) }, [vec(64)])).toThrow('intervention #1: its vector is no longer in the library');
    expect(() => toSpec({ n: 3, draft: draft({ type: 'patch', vectorId: null }) }, [])).toThrow('intervention #3: patch needs a source prompt');
  });
});

describe('hooks as the UI reads them', () => {
  it('the vector width the editor expects is the engine’s hook width for every steerable hook', () => {
    const info = e.info();
    const hooks = steerableHooks(info.hookNames);
    expect(hooks).toContain('blocks.3.hook_resid_post');
    expect(hooks).not.toContain('blocks.0.attn.hook_pattern');
    for (const h of hooks) expect(vectorWidth(h, info, false), h).toBe(hookWidth(e.spec, h).width);
    expect(vectorWidth('blocks.0.attn.hook_z', info, true)).toBe(info.dHead);
  });

  it('a heatmap row steers the residual stream that row shows, and a hook marks the first row it reaches', () => {
    const L = e.spec.nLayers;
    for (let row = 0; row <= L; row++) expect(lensRowOf(hookOfLensRow(row), L)).toBe(row);
    expect(lensRowOf('hook_embed', L)).toBe(0);
    expect(lensRowOf('blocks.2.hook_resid_pre', L)).toBe(2);
    expect(lensRowOf('blocks.2.mlp.hook_post', L)).toBe(3);
    expect(lensRowOf('ln_final.hook_normalized', L)).toBe(L);
  });

  it('the editor describes a hook with its own block number, never the declaration\'s "block l"', () => {
    expect(hookDescription('blocks.3.hook_resid_post')).toBe('[pos, d_model] · residual stream after block 3');
    expect(hookDescription('blocks.12.hook_resid_pre')).toBe('[pos, d_model] · residual stream entering block 12');
    expect(hookDescription('ln_final.hook_normalized')).toBe('[pos, d_model] · final norm output, input to W_U');
    for (const h of steerableHooks(e.info().hookNames)) expect(hookDescription(h), h).not.toMatch(/\bl\b|unknown/);
  });
});

describe('marks of steered tokens', () => {
  it('prompt positions follow the selector and only the prompt pass (step 0)', () => {
    expect(steeredPromptPositions(draft({ positions: { start: 2, end: 5 } }), 11)).toEqual([2, 3, 4]);
    expect(steeredPromptPositions(draft({ positions: 'generated' }), 11)).toEqual([10]);
    expect(steeredPromptPositions(draft({ positions: { start: 11, end: 20 } }), 11)).toEqual([]);
    expect(steeredPromptPositions(draft({ steps: { start: 1, end: null } }), 11)).toEqual([]);
    expect(promptMarks([{ n: 1, draft: draft({ positions: [0] }) }, { n: 3, draft: draft({}) }], 2)).toEqual([[1, 3], [3]]);
  });

  it('a generated token is marked exactly when the engine’s pass that drew it was steered (steps from 5: the first 5 margins are the unsteered ones)', async () => {
    const v = vec(64).vector;
    const d = draft({ steps: { start: 5, end: null } });
    const nPrompt = e.encodePrompt({ prompt: PROMPT }).length;
    const iv = toIntervention({ hook: d.hook, type: 'add', vector: v, alpha: 4, steps: { start: 5 } }, e.spec, { nPrompt, maxNewTokens: 8 });
    const req = { prompt: PROMPT, good: { text: ' happy' }, bad: { text: ' sad' }, maxNewTokens: 8 };
    const plain = await e.generate(req);
    const steered = await e.generate({ ...req, interventions: [iv] });
    for (let k = 0; k < 8; k++) {
      const marked = drawnUnderSteering(d, nPrompt, k);
      expect(marked, `step ${k}`).toBe(k >= 5);
      if (!marked) expect(steered.margins[k]).toBe(plain.margins[k]);
    }
    expect(steered.margins[5]).not.toBe(plain.margins[5]);
    // Explicit position nPrompt + 1 is read by pass 2 only.
    expect([0, 1, 2, 3].map((k) => drawnUnderSteering(draft({ positions: [nPrompt + 1] }), nPrompt, k))).toEqual([false, false, true, false]);
  });

  it('first divergence of two generations', () => {
    expect(firstDivergence([1, 2, 3], [1, 2, 4])).toBe(2);
    expect(firstDivergence([1, 2], [1, 2, 3])).toBe(2);
    expect(firstDivergence([1, 2], [1, 2])).toBeNull();
  });
});

describe('typed lists', () => {
  it('layers, doses and positions parse or say what is wrong', () => {
    expect(parseIndexList('all', 5, 'layers')).toEqual([0, 1, 2, 3, 4]);
    expect(parseIndexList('1, 3-4', 5, 'layers')).toEqual([1, 3, 4]);
    expect(() => parseIndexList('7', 5, 'layers')).toThrow('layers: 7 does not exist (0..4)');
    expect(() => parseIndexList('a', 5, 'layers')).toThrow('layers: "a" is not an index or a range like 0-4');
    expect(parseNumberList('−8, -4 0,4.5', 'doses')).toEqual([-8, -4, 0, 4.5]);
    expect(() => parseNumberList('1, x', 'doses')).toThrow('doses: "x" is not a number');
    expect(parsePositionList('3, 5 7')).toEqual([3, 5, 7]);
    expect(() => parsePositionList('3, -1')).toThrow('"-1" is not a position');
  });
});
