import { expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { RunContext } from '../../workers/engine/model/run_context';
import { logitLens } from '../../workers/engine/analysis/lens';
import { sharedPath } from '../shared';

it('the logit lens computed in row chunks (a remainder chunk included) equals the one-shot lens exactly', async () => {
  const b = new CpuBackend();
  const { model } = await loadTransformer(new NodeFiles(sharedPath('models', 'stories260K')), b);
  const ids = Int32Array.from([1, 317, 269, 274, 287, 263, 377, 267, 265, 282, 295]);
  const names = ['blocks.0.hook_resid_pre', ...[0, 1, 2, 3, 4].map((l) => `blocks.${l}.hook_resid_post`)];
  const ctx = new RunContext(b, { pos0: 0, n: ids.length, nPrompt: ids.length, step: 0 }, (n) => names.includes(n));
  model.forward(ids, ctx, 'none');
  const stack = b.concatRows(names.map((n) => ctx.captured.get(n)!)); // 66 rows
  const whole = await logitLens(model, stack, [274, 317, 2], 5);
  const chunked = await logitLens(model, stack, [274, 317, 2], 5, 512 * 4 * 7); // 7 rows per chunk
  expect(chunked.gathered).toEqual(whole.gathered);
  expect(chunked.topIds).toEqual(whole.topIds);
  expect(chunked.topLogProbs).toEqual(whole.topLogProbs);
  expect(Array.from(whole.topIds.subarray(0, 5)).every((id) => id >= 0 && id < 512)).toBe(true);
});
