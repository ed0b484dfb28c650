/**
 * Fresh-user trial (fitapply 6): every view's decision-point note is one text, naming the first
 * tokens where the futures differ; Dose–response's sweep result carries no resolved futures, so
 * the tokens come with the shared prefix itself (decision_point.ts SharedPrefix.differ). The futures
 * here are id lists over a stand-in vocabulary: after the shared “·g” “o” the good future goes on
 * with “g” and the bad one with “or”.
 */
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { decisionPoint } from '../../workers/engine/decision_point';
import type { FutureInput, ResolvedFuture } from '../../workers/engine/prompt';
import { SharedPrefixNote } from '../../app/components/SharedPrefixNote';

const VOCAB = ['<s>', 'The', ' dog', ' g', 'o', 'g', 'or', 'ne'];
const codec = {
  encodePrompt: () => [0, 1, 2],
  resolveFuture: (_ids: readonly number[], f: FutureInput): ResolvedFuture => {
    const sequences = (f as { ids: number[][] }).ids;
    return { sequences, tokens: sequences.map((s) => s.map((i) => VOCAB[i])), firstIds: [...new Set(sequences.map((s) => s[0]))] };
  },
};

describe('the shared-prefix note', () => {
  it('reads the same in a view that passes only the result\'s sharedPrefix (Dose–response) as in Analyse, with the differing tokens', () => {
    const dp = decisionPoint(codec, { prompt: 'The dog' }, { ids: [[3, 4, 5, 7]] }, { ids: [[3, 4, 6]] });
    expect(dp.sharedPrefix!.differ).toEqual(['g', 'or']);
    const html = renderToStaticMarkup(createElement(SharedPrefixNote, { shared: dp.sharedPrefix, testId: 'sweep-shared-prefix' }));
    expect(html).toContain('decision point after the shared prefix ` go`, 2 tokens: the margins read the first tokens where the futures differ, “g” vs “or”');
    // the futures resolved after the prefix start with the same tokens the note names
    expect([dp.good.tokens[0][0], dp.bad.tokens[0][0]]).toEqual(dp.sharedPrefix!.differ);
  });
});
