// @vitest-environment happy-dom
/**
 * Where a first-token margin is read, said where it is shown (issue 27 a): the captions name the
 * decision point — the last prompt token, or after the futures' shared prefix, which the engine
 * teacher-forces after the prompt (workers/engine/decision_point.ts) — and never "the last prompt
 * token" when the margin is read k tokens later. The prefix's positions are marked as such in the
 * token strip and the margin heatmap, and the intervention editor's default position is the
 * decision point even while the strip still shows the bare prompt (before Analyse). The futures
 * are id lists over a stand-in vocabulary, as in shared_prefix_note.test.ts: after the shared
 * “·g” “o” the good future goes on with “g” and the bad one with “or”.
 */
import { act, createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it, vi } from 'vitest';
import { decisionPoint } from '../../workers/engine/decision_point';
import type { FutureInput, PromptInput, ResolvedFuture } from '../../workers/engine/prompt';
import { atDecisionPoint, runShapeOf } from '../../workers/engine/studies/resolve_interventions';
import type { Engine } from '../../workers/engine/engine';
import type { Analysis, ModelInfo } from '../../workers/protocol';
import { decisionPointText } from '../../app/lib/decision_point_text';
import { decisionPointTokens, PREFIX_TITLE } from '../../app/lib/decision_point_tokens';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
const { useStore } = await import('../../app/store');
const { TokenStrip } = await import('../../app/components/TokenStrip');
const { PromptTokens } = await import('../../app/components/PromptTokens');
const { MarginHeatmapView } = await import('../../app/views/MarginHeatmapView');
const { InterventionEditor } = await import('../../app/components/InterventionEditor');
const { futureKey } = await import('../../app/lib/futures');

const VOCAB = ['<s>', 'The', ' dog', ' g', 'o', 'g', 'or', 'ne'];
const PROMPT = [0, 1, 2];
const codec = {
  encodePrompt: (p: PromptInput) => [...PROMPT, ...(p.forcedIds ?? [])],
  resolveFuture: (_ids: readonly number[], f: FutureInput): ResolvedFuture => {
    const sequences = (f as { ids: number[][] }).ids;
    return { sequences, tokens: sequences.map((s) => s.map((i) => VOCAB[i])), firstIds: [...new Set(sequences.map((s) => s[0]))] };
  },
};
const GOOD: FutureInput = { ids: [[3, 4, 5, 7]] }, BAD: FutureInput = { ids: [[3, 4, 6]] };
const dp = decisionPoint(codec, { prompt: 'The dog' }, GOOD, BAD);
const plain = decisionPoint(codec, { prompt: 'The dog' }, { ids: [[5]] }, { ids: [[6]] });

const dom = domPerTest(useStore);
const $ = (id: string) => dom.host.querySelector(`[data-testid="${id}"]`);

/** A canvas 2D context that draws nothing and measures 7 px a character (happy-dom has none). */
function stubCanvas() {
  const ctx = new Proxy({}, {
    get: (_t, k) => (k === 'measureText' ? (s: string) => ({ width: 7 * s.length }) : () => undefined),
    set: () => true,
  });
  vi.spyOn(HTMLCanvasElement.prototype, 'getContext').mockReturnValue(ctx as never);
}

/** An analysis of the prompt at decision point `d` (1 layer: embed + L0 rows), margins made up. */
function analysisAt(d: typeof dp): Analysis {
  const T = d.promptIds.length, L1 = 2;
  return {
    sharedPrefix: d.sharedPrefix, ids: d.promptIds, tokens: d.promptIds.map((i) => VOCAB[i]), nLayers: 1, nHeads: 1, good: d.good, bad: d.bad,
    sequenceMargin: 0.5, lensHandle: 1, lensMargin: new Float32Array(L1 * T).map((_, i) => i / 10), finalMargin: new Float32Array(T).map((_, i) => i / 4),
    residNorms: new Float32Array(L1 * T), massive: {} as never, sinks: {} as never,
  } as unknown as Analysis;
}

function showAnalysis(d: typeof dp) {
  const analysis = analysisAt(d);
  act(() => {
    useStore.setState({ modelStatus: 'ready', modelLabel: 'm', modelIdentity: 'm' });
    useStore.getState().setResult({ analysis, modelLabel: 'm', computedWith: 'm', prompt: useStore.getState().prompt, chatTemplate: false, system: '', tools: [], enableThinking: true, good: useStore.getState().good, bad: useStore.getState().bad, steering: [], baseline: null } as never);
    useStore.getState().setPromptTokens({ ids: analysis.ids, tokens: analysis.tokens, prefix: analysis.sharedPrefix?.ids.length ?? 0 });
  });
}

describe('the decision point in words', () => {
  it('the last prompt token without a shared prefix; after the shared prefix, k tokens, with one; a batch whose prompts differ names both', () => {
    expect(plain.sharedPrefix).toBeNull();
    expect(decisionPointText(plain.sharedPrefix)).toBe('the decision point (the last prompt token)');
    expect(decisionPointText(dp.sharedPrefix)).toBe('the decision point (after the shared prefix, 2 tokens)');
    expect(decisionPointText({ ids: [9] })).toBe('the decision point (after the shared prefix, 1 token)');
    expect(decisionPointText([dp.sharedPrefix, dp.sharedPrefix])).toBe(decisionPointText(dp.sharedPrefix));
    expect(decisionPointText([null, undefined])).toBe(decisionPointText(null));
    expect(decisionPointText([dp.sharedPrefix, null])).toBe('the decision point (the last prompt token, or after the futures\' shared prefix where a prompt\'s futures share one)');
  });

  it('the margin heatmap\'s summary reads the final margin at the decision point; with a shared prefix its columns and the readout token are marked', () => {
    stubCanvas();
    showAnalysis(plain);
    act(() => dom.root.render(createElement(MarginHeatmapView)));
    expect($('final-margin-last-label')?.textContent).toBe('Final-layer margin at the decision point (the last prompt token)');
    expect($('margin-heatmap')?.getAttribute('data-prefix-cols')).toBeNull();
    expect($('margin-prefix-cols')).toBeNull();

    showAnalysis(dp);
    expect($('final-margin-last-label')?.textContent).toBe('Final-layer margin at the decision point (after the shared prefix, 2 tokens)');
    expect($('final-margin-last')?.textContent).toBe('+1.0000'); // finalMargin[T − 1], T = 3 + 2
    expect($('margin-heatmap')?.getAttribute('data-prefix-cols')).toBe('3 4');
    expect($('margin-prefix-cols')?.textContent).toBe(`Positions 3–4 (labels in grey italics) are the ${PREFIX_TITLE}, not prompt text; the margin is read at the decision point (after the shared prefix, 2 tokens), position 4.`);
    // the readout: arrow keys from column 0 to the prompt's last token (2), then into the prefix (3)
    const key = () => act(() => { $('margin-heatmap')!.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true })); });
    key(); key();
    expect($('readout-token')?.getAttribute('data-prefix')).toBeNull();
    key();
    expect($('readout-position')?.textContent).toBe('3');
    expect($('readout-token')?.getAttribute('data-prefix')).toBe('true');
    expect($('readout-token')?.getAttribute('title')).toBe(PREFIX_TITLE);
  });
});

describe('the shared prefix in the token strip', () => {
  it('marks the last k tokens as the teacher-forced prefix (class, data-prefix, title) and no other', () => {
    const html = renderToStaticMarkup(createElement(TokenStrip, { tokens: ['<s>', 'The', ' dog', ' g', 'o'], ids: [0, 1, 2, 3, 4], prefix: 2 }));
    const host = document.createElement('div');
    host.innerHTML = html;
    const li = [...host.querySelectorAll('li')];
    expect(li.map((l) => l.getAttribute('data-prefix'))).toEqual([null, null, null, 'true', 'true']);
    expect(li.map((l) => l.classList.contains('prefix'))).toEqual([false, false, false, true, true]);
    expect(li[3].getAttribute('title')).toBe(`position 3 · id 3 · ${PREFIX_TITLE}`);
    expect(li[2].getAttribute('title')).toBe('position 2 · id 2');
  });

  it('after an analysis with a shared prefix the experiment panel\'s strip ends with it, marked; a tokenized prompt marks none', () => {
    act(() => useStore.getState().setPromptTokens({ ids: PROMPT, tokens: PROMPT.map((i) => VOCAB[i]) }));
    act(() => dom.root.render(createElement(PromptTokens)));
    expect(dom.host.querySelectorAll('[data-prefix]')).toHaveLength(0);
    showAnalysis(dp);
    expect([...dom.host.querySelectorAll('[data-prefix="true"]')].map((e) => e.getAttribute('data-testid'))).toEqual(['token-3', 'token-4']);
    expect(dom.host.querySelector('.strip-title')?.textContent).toContain(`(5, the last 2 the ${PREFIX_TITLE};`);
  });
});

describe('the intervention editor\'s default position is the decision point', () => {
  const chips = (s: ReturnType<typeof useStore.getState>) => ({
    good: { key: futureKey(s, s.good), resolved: codec.resolveFuture(PROMPT, GOOD) },
    bad: { key: futureKey(s, s.bad), resolved: codec.resolveFuture(PROMPT, BAD) },
  });

  it('with k shared tokens the last position of the run that includes the prefix is nPrompt − 1 = 3 + k − 1: the engine resolves runs there, and the UI counts the same positions from the future chips', () => {
    const engine = { decisionPoint: (p: PromptInput, g: FutureInput, b: FutureInput) => decisionPoint(codec, p, g, b), encodePrompt: codec.encodePrompt } as unknown as Engine;
    const run = runShapeOf(engine, atDecisionPoint(engine, { prompt: 'The dog' }, GOOD, BAD));
    expect(run.nPrompt).toBe(PROMPT.length + 2);
    expect(run.forcedIds).toEqual([3, 4]);
    const s = useStore.getState();
    const keys = { good: futureKey(s, s.good), bad: futureKey(s, s.bad) };
    const bare = { ids: PROMPT, tokens: PROMPT.map((i) => VOCAB[i]) };
    // before Analyse: the strip holds the bare prompt; the chips give the prefix
    expect(decisionPointTokens(bare, chips(s), keys)).toEqual({ ids: dp.promptIds, tokens: ['<s>', 'The', ' dog', ' g', 'o'], prefix: 2 });
    // after it: the analysis's tokens, prefix included, are not counted twice
    expect(decisionPointTokens({ ids: dp.promptIds, tokens: dp.promptIds.map((i) => VOCAB[i]), prefix: 2 }, chips(s), keys).ids).toEqual(dp.promptIds);
    // chips for another prompt or future text: the strip as it is
    expect(decisionPointTokens(bare, chips(s), { ...keys, bad: 'another' })).toEqual({ ...bare, prefix: 0 });
    // futures edited after the analysis so that they share none: the stored prefix is dropped
    const apart = { good: chips(s).good, bad: { key: keys.bad, resolved: codec.resolveFuture(PROMPT, { ids: [[6]] }) } };
    expect(decisionPointTokens({ ids: dp.promptIds, tokens: dp.promptIds.map((i) => VOCAB[i]), prefix: 2 }, apart, keys)).toEqual({ ...bare, prefix: 0 });
  });

  it('"explicit positions" starts at the decision point (position 4) while the strip shows the 3 bare prompt tokens', () => {
    act(() => {
      const s = useStore.getState();
      useStore.setState({ info: { label: 'm', nLayers: 2, dModel: 4, nHeads: 1, nKvHeads: 1, dHead: 4, dMlp: 8, hookNames: ['blocks.0.hook_resid_post', 'blocks.1.hook_resid_post'] } as unknown as ModelInfo, modelStatus: 'ready' });
      s.setPromptTokens({ ids: PROMPT, tokens: PROMPT.map((i) => VOCAB[i]) });
      s.setFutureChips(chips(s));
      const id = s.addIntervention({ enabled: true, hook: 'blocks.1.hook_resid_post', type: 'add', dose: 4, rotateBy: 'theta', mode: 'project', vectorId: null, source: '', head: null, positions: 'all', steps: null });
      s.selectIntervention(id);
    });
    act(() => dom.root.render(createElement(InterventionEditor)));
    const select = $('editor-positions') as HTMLSelectElement;
    act(() => { select.value = 'explicit'; select.dispatchEvent(new Event('change', { bubbles: true })); });
    expect(useStore.getState().interventions[0].positions).toEqual([PROMPT.length + 2 - 1]);
    expect(($('editor-position-list') as HTMLInputElement).value).toBe('4');
    // an analysis reads 'generated' at its last position only: the decision point, said as the captions say it
    expect(dom.host.querySelector('option[value="generated"]')?.getAttribute('title')).toMatch(/reads only its last position, the decision point \(after the shared prefix, 2 tokens\)$/);
  });
});
