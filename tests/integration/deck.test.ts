import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { experimentSpecs, futureInput, parseDeck, type Experiment } from '../../workers/engine/experiment';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { resolveInterventions } from '../../workers/engine/studies/resolve_interventions';
import { doseResponse } from '../../workers/engine/studies/sweep';
import { sharedPath } from '../shared';
import { compareModels } from '../../workers/engine/studies/compare';

/**
 * The poster deck (public/experiments/deck.json, written by tools/make_deck.ts) claims effects on
 * stories260K; each claim in its notes is checked here on the golden copy of the model in ../shared.
 */
const exps: Experiment[] = parseDeck(JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'public', 'experiments', 'deck.json'), 'utf8'))).experiments;
let engine: Engine;

beforeAll(async () => { engine = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); });
afterAll(() => engine?.dispose());

const req = (e: Experiment) => ({ prompt: e.prompt, chatTemplate: e.chatTemplate, good: futureInput(e.good), bad: futureInput(e.bad) });
/** Lens margin Δ^l at the last prompt token for every layer l (0 = embeddings). */
async function lastColumn(e: Experiment): Promise<number[]> {
  const a = await engine.analyse(req(e));
  const T = a.ids.length;
  return Array.from({ length: a.nLayers + 1 }, (_, l) => a.lensMargin[l * T + T - 1]);
}

describe('the poster deck shows real effects on stories260K', () => {
  it('has 4–6 experiments on the bundled model, each with a title and a note', () => {
    expect(exps.length).toBeGreaterThanOrEqual(4);
    expect(exps.length).toBeLessThanOrEqual(6);
    expect(exps.filter((e) => e.modelB).map((e) => e.modelB)).toEqual([{ kind: 'bundled', name: 'stories260K-happy-ft' }]);
    for (const e of exps) {
      expect(e.model).toEqual({ kind: 'bundled', name: 'stories260K' });
      expect(e.title && e.note).toBeTruthy();
    }
  });

  it('pronoun agreement: "girl" gives Δ(she − he) > +3 and "boy" < −2, with the two columns alike (within 1 nat) before the last block', async () => {
    const girl = await lastColumn(exps[0]), boy = await lastColumn(exps[1]);
    const L = girl.length - 1;
    expect(girl[L]).toBeGreaterThan(3);
    expect(boy[L]).toBeLessThan(-2);
    for (let l = 0; l < L; l++) expect(Math.abs(girl[l] - boy[l]), `layer ${l}`).toBeLessThan(1);
  });

  it('happy/sad CAA dose–response: the margin rises with α from below −3 to above +4 at the deck\'s layer', async () => {
    const e = exps[2], sw = e.view.sweep!;
    const doses = sw.doses.split(',').map(Number);
    const r = await doseResponse(engine, { ...req(e), template: { hook: `blocks.{l}.${sw.site}`, type: sw.type, vector: e.vectors[sw.vector!].values! }, layers: sw.layers.split(',').map(Number), doses });
    const m = r.margin[0];
    for (let i = 1; i < m.length; i++) expect(m[i], `dose ${doses[i]}`).toBeGreaterThan(m[i - 1]);
    expect(m[0]).toBeLessThan(-3);
    expect(m[m.length - 1]).toBeGreaterThan(4);
  });

  it('steered vs unsteered generation: the steered story differs and its first-step Δ(happy − sad) is > 3 nats higher', async () => {
    const e = exps[3];
    const g = { ...req(e), maxNewTokens: e.generation.maxNewTokens, temperature: 0, seed: 0 };
    const nPrompt = engine.encodePrompt(g).length;
    const interventions = await resolveInterventions(engine, experimentSpecs(e), { nPrompt, maxNewTokens: g.maxNewTokens });
    const plain = await engine.generate(g), steered = await engine.generate({ ...g, interventions });
    expect(steered.text).not.toBe(plain.text);
    // from the first token (issue 29 item 10: the old slide's stories only parted later, both "proud of herself")
    expect(steered.tokens[0]).not.toBe(plain.tokens[0]);
    expect(plain.text).not.toMatch(/happy|proud/);
    expect(steered.margins![0] - plain.margins![0]).toBeGreaterThan(3);
    // the numbers the note quotes
    expect(e.note).toContain(`from +${plain.margins![0].toFixed(2)} to +${steered.margins![0].toFixed(2)} nats`);
  });

  it('sinks: the last layer has the highest sink rate, at least a quarter of its heads', async () => {
    const a = await engine.analyse({ ...req(exps[4]), sinkEps: exps[4].view.sinkEps });
    const rate = Array.from(a.sinks.sinkRate);
    expect(rate[rate.length - 1]).toBeGreaterThanOrEqual(0.25);
    for (let l = 0; l < rate.length - 1; l++) expect(rate[l]).toBeLessThan(rate[rate.length - 1]);
  });

  it('base vs fine-tune: Δ(happy − sad) +0.7 in A and +8.1 in B; only block 3\'s MLP weights differ; B\'s block-3 mlp_out patched into A gives r = 1, r = 0 upstream', async () => {
    const e = exps.find((x) => x.view.name === 'compare')!;
    const b = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K-happy-ft')), new CpuBackend());
    try {
      const c = await compareModels(engine, b, { ...req(e), hooks: ['resid_pre', 'attn_out', 'mlp_out'], reverse: false });
      const T = c.sides.a.ids.length;
      expect(c.sides.a.finalMargin[T - 1]).toBeCloseTo(0.7, 1);
      expect(c.sides.b.finalMargin[T - 1]).toBeCloseTo(8.1, 1);
      for (const [m, v] of c.weights.modules) for (let l = 0; l < v.length; l++) expect(v[l] !== 0, `${m} ${l}`).toBe(l === 3 && ['gate', 'up', 'down'].includes(m));
      const mlp = c.crossPatch.get('mlp_out')!.layerRecovery;
      expect(mlp[3]).toBeCloseTo(1, 5);
      for (const h of ['resid_pre', 'attn_out', 'mlp_out'] as const) for (let l = 0; l < 3; l++) expect(Math.abs(c.crossPatch.get(h)!.layerRecovery[l])).toBeLessThan(1e-6);
    } finally {
      b.dispose();
    }
  });
});
