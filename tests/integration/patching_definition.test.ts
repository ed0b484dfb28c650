import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine, type RunOptions } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';
import { patchingGrid, type PatchingRequest } from '../../workers/engine/studies/patching';
import { toIntervention } from '../../workers/engine/steering/spec';
import { sharedPath } from '../shared';
import { json, memory, modelFiles, putJson } from '../hardening/model_variants';

/**
 * Activation patching against its definition written out with plain engine runs (Heimersheim & Nanda
 * arXiv 2404.15255): a cell (l, t) of the noising grid is the clean run with the corrupted run's value
 * of blocks.l.hook_resid_pre at position t, r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt); the
 * work counted in closed form from the two prompts' ids; the sequence metric with a three-token future
 * and an intervention against Engine.analyse (whose sequence margins are golden-checked).
 */
let e: Engine;
const ref = JSON.parse(fs.readFileSync(sharedPath('models', 'stories260K', 'reference', 'reference.json'), 'utf8')) as { prompts: { name: string; prompt: string }[] };
const CLEAN = ref.prompts.find((p) => p.name === 'lily_tom_ball')!.prompt;
const CORRUPT = 'Tom and Lily went to the park. Lily gave the ball to';
const req = (over: Partial<PatchingRequest> = {}): PatchingRequest => ({ clean: CLEAN, corrupt: CORRUPT, good: { text: ' Tom' }, bad: { text: ' Lily' }, hook: 'resid_pre', ...over });

beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
}, 120_000);
afterAll(() => e.dispose());

/** Δ of the first future tokens at the last position of a run of `ids` with `interventions`. */
async function finalMargin(ids: number[], good: number, bad: number, interventions: RunOptions['interventions'] = []): Promise<number> {
  const out = await e.run(ids, { interventions, logits: 'last' });
  const lp = logSoftmaxCpu(out.logits, out.logits.length);
  return lp[good] - lp[bad];
}

describe('activation patching against its definition', () => {
  it('noising cells: the clean run with the corrupted value at (l, t), from plain runs', async () => {
    const g = await patchingGrid(e, req({ direction: 'noise' }));
    const [good] = g.good.firstIds, [bad] = g.bad.firstIds;
    const hooks = Array.from({ length: 5 }, (_, l) => `blocks.${l}.hook_resid_pre`);
    const corrupt = await e.run(g.corruptIds, { capture: hooks, logits: 'last' });
    const dClean = await finalMargin(g.cleanIds, good, bad), dCorrupt = await finalMargin(g.corruptIds, good, bad);
    expect(g.cleanMargin).toBeCloseTo(dClean, 5);
    expect(g.corruptMargin).toBeCloseTo(dCorrupt, 5);
    for (const [l, t] of [[0, 1], [2, 3], [3, 20], [4, 12]]) {
      const iv = { hook: hooks[l], op: { kind: 'patch' as const, replacement: corrupt.captured.get(hooks[l])! }, positions: [t] };
      const dp = await finalMargin(g.cleanIds, good, bad, [iv]);
      expect(g.recovery[l * 21 + t]).toBeCloseTo((dp - dCorrupt) / (dClean - dCorrupt), 4);
    }
  });

  it('head cells of hook_z patch that head only (some head of some layer recovers part of the gap); a single cell keeps the whole-layer row at n_layers NaNs', async () => {
    const z = await patchingGrid(e, req({ hook: 'z' }));
    expect(Math.max(...Array.from(z.recovery).map(Math.abs))).toBeGreaterThan(0.05);
    const one = await patchingGrid(e, req({ hook: 'z', only: { layer: 1, col: 2 } }));
    expect(one.layerRecovery).toHaveLength(5);
    expect(one.recovery[1 * 8 + 2]).toBeCloseTo(z.recovery[1 * 8 + 2], 5);
  });

  it('a whole layer of hook_z (every head at every position) is the corrupted run with blocks.l.attn.hook_z of the clean run, from plain runs', async () => {
    const z = await patchingGrid(e, req({ hook: 'z' }));
    const [good] = z.good.firstIds, [bad] = z.bad.firstIds;
    const hooks = Array.from({ length: 5 }, (_, l) => `blocks.${l}.attn.hook_z`);
    const clean = await e.run(z.cleanIds, { capture: hooks, logits: 'last' });
    const dClean = await finalMargin(z.cleanIds, good, bad), dCorrupt = await finalMargin(z.corruptIds, good, bad);
    const rs: number[] = [];
    for (const l of [0, 2, 4]) {
      const dp = await finalMargin(z.corruptIds, good, bad, [{ hook: hooks[l], op: { kind: 'patch', replacement: clean.captured.get(hooks[l])! }, positions: 'all' }]);
      rs.push((dp - dCorrupt) / (dClean - dCorrupt));
      expect(z.layerRecovery[l]).toBeCloseTo(rs.at(-1)!, 4);
    }
    expect(Math.max(...rs.map(Math.abs))).toBeGreaterThan(0.05); // a layer whose heads matter, so a patch of no head (r = 0) fails
  });

  it('chatTemplate: both prompts are encoded with the tokenizer’s chat template (stories260K with a Llama-2 template)', async () => {
    const f = modelFiles();
    const template = "{% for message in messages %}{{ bos_token + '[INST] ' + message['content'].strip() + ' [/INST]' }}{% endfor %}";
    const chat = await Engine.load(memory(putJson(f, 'tokenizer_config.json', { ...json(f, 'tokenizer_config.json'), chat_template: template })), new CpuBackend());
    try {
      const g = await patchingGrid(chat, req({ chatTemplate: true, only: { layer: 1, col: 3 } }));
      expect(g.cleanIds).toEqual(chat.encodePrompt({ prompt: CLEAN, chatTemplate: true }));
      expect(g.corruptIds).toEqual(chat.encodePrompt({ prompt: CORRUPT, chatTemplate: true }));
      expect(g.cleanIds.length).toBeGreaterThan(chat.encodePrompt({ prompt: CLEAN }).length); // the template's [INST] … [/INST] tokens
    } finally {
      chat.dispose();
    }
  });

  it('positions computed with prefix reuse: T − t for each cell that runs, T − (first differing position) for each whole layer', async () => {
    const g = await patchingGrid(e, req());
    const T = g.cleanIds.length;
    const diff = g.cleanIds.flatMap((id, t) => (id !== g.corruptIds[t] ? [t] : []));
    const fd = diff[0];
    const layer0 = diff.reduce((s, t) => s + (T - t), 0); // layer 0: only the differing tokens' rows differ
    let later = 0;
    for (let t = fd; t < T; t++) later += T - t; // layers 1–4: every position from the first difference on
    expect(g.positionsComputed).toBe(layer0 + 4 * later + 5 * (T - fd));
    const naive = await patchingGrid(e, req({ reuse: false }));
    expect(naive.positionsComputed).toBe((5 * 21 + 5) * T);
  });

  it('the sequence metric with a three-token future and an intervention: clean and corrupted margins are Engine.analyse’s teacher-forced ones', async () => {
    const T = e.encodePrompt({ prompt: CLEAN }).length;
    const v = Array.from({ length: 64 }, (_, i) => (i === 7 ? 1 : 0));
    const interventions = [toIntervention({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: v, alpha: 3 }, e.spec, { nPrompt: T, maxNewTokens: 3 })];
    const futures = { good: { text: ' Tom and Lily' }, bad: { text: ' Lily and Tom' } };
    const g = await patchingGrid(e, req({ ...futures, metric: 'sequence', hook: 'mlp_out', interventions, only: { layer: 2, col: 20 } }));
    expect(g.good.sequences[0].length).toBeGreaterThanOrEqual(3);
    const clean = await e.analyse({ prompt: CLEAN, ...futures, interventions });
    const corrupt = await e.analyse({ prompt: CORRUPT, good: { ids: g.good.sequences }, bad: { ids: g.bad.sequences }, interventions });
    expect(g.cleanMargin).toBeCloseTo(clean.sequenceMargin, 4);
    expect(g.corruptMargin).toBeCloseTo(corrupt.sequenceMargin, 4);
    const plain = await e.analyse({ prompt: CLEAN, ...futures });
    expect(Math.abs(plain.sequenceMargin - clean.sequenceMargin)).toBeGreaterThan(1e-3); // the intervention matters here
    const naive = await patchingGrid(e, req({ ...futures, metric: 'sequence', hook: 'mlp_out', interventions, only: { layer: 2, col: 20 }, reuse: false }));
    expect(g.patchedMargin[2 * 21 + 20]).toBeCloseTo(naive.patchedMargin[2 * 21 + 20], 5);
  });
});
