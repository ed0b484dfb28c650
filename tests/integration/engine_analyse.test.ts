import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { Engine } from '../../workers/engine/engine';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { readReference, sharedPath } from '../shared';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';
import { rmsNormCpu } from '../../workers/engine/ops/norm.cpu';
import { linearCpu } from '../../workers/engine/ops/linear.cpu';

const dir = sharedPath('models', 'stories260K');
const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8'));
const lily = ref.prompts[1];
const arrays = readReference(sharedPath('models/stories260K/reference/lily_tom_ball.safetensors'));
const weights = readReference(sharedPath('models/stories260K/model.safetensors'));

describe('stories260K analysis on the CPU backend', async () => {
  const engine = await Engine.load(new NodeFiles(dir), new CpuBackend());
  const a = await engine.analyse({ prompt: lily.prompt, good: { text: ' Tom' }, bad: { text: ' Lily' } });

  it('tokenizes the prompt exactly as the reference (BOS + ids)', () => {
    expect(a.ids).toEqual(lily.input_ids);
  });

  it('lens margin equals log_softmax(W_U·RMSNorm_f(h^l_t)) of " Tom" minus " Lily" at every layer and position', () => {
    const T = lily.n_prompt, D = 64, V = 512, L = 5;
    const normW = weights.get('model.norm.weight')!.data, WU = weights.get('lm_head.weight')!.data;
    const resid = arrays.get('resid_post')!.data, emb = arrays.get('embeddings')!.data;
    const [good] = a.good.firstIds, [bad] = a.bad.firstIds;
    let worst = 0;
    for (let l = 0; l <= L; l++) {
      for (let t = 0; t < T; t++) {
        const h = l === 0 ? emb.subarray(t * D, (t + 1) * D) : resid.subarray(((l - 1) * ref.prompts[1].n_positions + t) * D, ((l - 1) * ref.prompts[1].n_positions + t + 1) * D);
        const lp = logSoftmaxCpu(linearCpu(rmsNormCpu(h, normW, 1e-5, 0), WU, undefined, 1, D, V), V);
        worst = Math.max(worst, Math.abs(lp[good] - lp[bad] - a.lensMargin[l * T + t]));
      }
    }
    expect(worst).toBeLessThan(1e-4);
  });
});
