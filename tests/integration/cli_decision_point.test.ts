import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { runCli } from '../cli_run';
import { runCaptured } from '../model_run';
import { logSoftmax } from '../reference_math';
import { sharedPath } from '../shared';

/**
 * The runner at the decision point: `margins` with " dog" vs " door" (both "·do" + …) prints the
 * decision point's note once on stderr and measures the final margin after the shared "·do",
 * checked against a plain forward of the ids it printed (float64 log-softmax, tests/reference_math.ts).
 */
describe('branchpoint margins with futures that share their first token', () => {
  const model = sharedPath('models', 'stories260K');
  let e: Engine;
  beforeAll(async () => { e = await Engine.load(new NodeFiles(model), new CpuBackend()); }, 120_000);
  afterAll(() => e.dispose());

  it('prints the note once and reads the margin where the futures differ', async () => {
    const prompt = 'Lily saw a big';
    const r = await runCli(['margins', '--model', model, '--prompt', prompt, '--good', ' dog', '--bad', ' door']);
    expect(r.code).toBe(0);
    const ids = e.encodePrompt({ prompt });
    const dog = e.resolveFuture(ids, { text: ' dog' }, { prompt }).sequences[0], door = e.resolveFuture(ids, { text: ' door' }, { prompt }).sequences[0];
    const note = `note: decision point after the shared prefix \`${e.tokenStrings([dog[0]], ids)[0]}\`, 1 token`;
    expect(r.err.split('\n').filter((l) => l.startsWith('note: decision point'))).toEqual([note]);
    const out = JSON.parse(r.out) as { ids: number[]; final_margin: number[] };
    expect(out.ids).toEqual([...ids, dog[0]]);
    const V = e.spec.dVocab, T = out.ids.length;
    const lp = logSoftmax((await runCaptured(e.backend, e.model, out.ids, [])).logits.subarray((T - 1) * V, T * V));
    expect(Math.abs(lp[dog[1]] - lp[door[1]])).toBeGreaterThan(1e-3);
    expect(out.final_margin[T - 1]).toBeCloseTo(lp[dog[1]] - lp[door[1]], 4);
  }, 120_000);
});
