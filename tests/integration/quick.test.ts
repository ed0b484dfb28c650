import { it, expect } from 'vitest';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { loadTransformer } from '../../workers/engine/model/load';
import { RunContext } from '../../workers/engine/model/run_context';
import { sharedPath, readReference, maxAbsDiff } from '../shared';
import * as fs from 'node:fs';

it('quick', async () => {
  const b = new CpuBackend();
  const { model } = await loadTransformer(new NodeFiles(sharedPath('models', 'stories260K')), b);
  const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8'));
  const p = ref.prompts[1];
  const seq = Int32Array.from(p.sequence_ids.slice(0, p.n_positions));
  const ctx = new RunContext(b, { pos0: 0, n: seq.length, nPrompt: p.n_prompt, step: 0 }, (n) => n.endsWith('resid_post') || n.endsWith('hook_pattern'));
  const logits = await b.read(model.forward(seq, ctx)!);
  const r = readReference(sharedPath('models/stories260K/reference/lily_tom_ball.safetensors'));
  console.log(maxAbsDiff(logits, r.get('logits')!.data));
  expect(maxAbsDiff(logits, r.get('logits')!.data)).toBeLessThan(1e-4);
});
