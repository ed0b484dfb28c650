import { describe, expect, it } from 'vitest';
import QRCode from 'qrcode';
import { experimentFromHash, experimentHash } from '../../app/lib/experiment_state';
import { LINK_BASE } from '../../app/lib/link_delta';
import { posterQrLink, QR_MAX_VERSION, qrVersion } from '../../app/lib/qr_link';
import { readExperiment, type Experiment } from '../../workers/engine/experiment';

/**
 * Slide 1's QR code stays scannable when the experiment has interventions (trials found it dense):
 * at most QR_MAX_VERSION at error correction L, the vectors' values left out (and named) only when
 * they would make it denser, and the link still opens the prompt, futures and interventions.
 */
const PREFIX = 'https://lab.github.io/branchpoint/';

/** A seeded uniform generator (mulberry32): the same vector on every run. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The default experiment with a d-wide CAA vector (values as a file holds them) added at layers `layers`. */
function steered(d: number, layers: number[]): Experiment {
  const r = rng(d);
  const base = readExperiment(JSON.stringify(LINK_BASE));
  return {
    ...base, prompt: 'The little girl felt very', good: { mode: 'text', value: ' happy' }, bad: { mode: 'text', value: ' sad' },
    vectors: [{ name: 'CAA happy vs sad (TinyStories)', hook: 'blocks.3.hook_resid_post', model: 'stories260K', dModel: d, createdAt: '2026-12-01T01:08:00.000Z',
      provenance: { method: 'caa', position: 'last', positive: ['Lily got a new puppy.'], negative: ['Lily lost her puppy.'] }, values: Array.from({ length: d }, () => Math.fround((r() - 0.5) * 3)) }],
    interventions: layers.map((l) => ({ enabled: true, hook: `blocks.${l}.hook_resid_post`, type: 'add' as const, dose: 8, rotateBy: 'theta' as const, mode: 'project' as const, vector: 0, source: '', head: null, positions: [10], steps: null, sae: null })),
  };
}

describe('the QR code of poster mode\'s first slide', () => {
  it('an experiment without vectors keeps its whole short link', () => {
    const e = { ...readExperiment(JSON.stringify(LINK_BASE)), prompt: 'Once upon a time the cat' };
    const { url, omitted } = posterQrLink(e, PREFIX);
    expect(omitted).toEqual([]);
    expect(url).toBe(PREFIX + experimentHash(e, { short: true }).hash);
  });

  it('with a d_model 64 vector at two layers (the trial\'s experiment): the vector is left out and named, the code is at most version 13, and the link opens the prompt, futures and interventions', () => {
    const e = steered(64, [2, 3]);
    const withValues = PREFIX + experimentHash({ ...e, vectors: e.vectors.map((v) => ({ ...v, provenance: { ...v.provenance, positive: [], negative: [] } })) }, { short: true }).hash;
    expect(qrVersion(withValues)).toBeGreaterThan(15); // trials: version 18, 3.4 px a module
    const { url, omitted } = posterQrLink(e, PREFIX);
    expect(omitted).toEqual(['CAA happy vs sad (TinyStories)']);
    expect(qrVersion(url)).toBeLessThanOrEqual(QR_MAX_VERSION);
    expect(QRCode.create(url, { errorCorrectionLevel: 'L' }).modules.size).toBeLessThanOrEqual(17 + 4 * QR_MAX_VERSION);
    const back = experimentFromHash(url.slice(PREFIX.length))!;
    expect(back.prompt).toBe(e.prompt);
    expect(back.bad).toEqual(e.bad);
    expect(back.vectors.every((v) => v.values === null)).toBe(true);
    const settings = (x: Experiment) => x.interventions.map(({ vector: _v, ...d }) => d);
    expect(settings(back)).toEqual(settings(e));
  });

  it('a vector no enabled intervention uses is left out without a word (issue 29: slide 1 named it anyway); one an enabled intervention uses is named', () => {
    const e = steered(64, [2, 3]);
    const withValues = (x: Experiment) => PREFIX + experimentHash({ ...x, vectors: x.vectors.map((v) => ({ ...v, provenance: { ...v.provenance, positive: [], negative: [] } })) }, { short: true }).hash;
    // both interventions switched off, then none at all: the vector stays in the library, its values too dense for the code
    for (const x of [{ ...e, interventions: e.interventions.map((d) => ({ ...d, enabled: false })) }, { ...e, interventions: [] }]) {
      expect(qrVersion(withValues(x))).toBeGreaterThan(QR_MAX_VERSION);
      const { url, omitted } = posterQrLink(x, PREFIX);
      expect(omitted).toEqual([]);
      expect(qrVersion(url)).toBeLessThanOrEqual(QR_MAX_VERSION);
      expect(experimentFromHash(url.slice(PREFIX.length))!.vectors.every((v) => v.values === null)).toBe(true);
    }
    // a second vector, used by the one enabled intervention: only it is named
    const other = { ...e.vectors[0], name: 'ActAdd love − hate' };
    const two: Experiment = { ...e, vectors: [e.vectors[0], other], interventions: [{ ...e.interventions[0], enabled: false }, { ...e.interventions[1], vector: 1 }] };
    expect(posterQrLink(two, PREFIX).omitted).toEqual(['ActAdd love − hate']);
    // the open Dose–response view's sweep runs with its vector: named though no intervention uses it
    const dose: Experiment = { ...e, interventions: [], view: { ...e.view, name: 'dose', sweep: { layers: 'all', doses: '-4,0,4', site: 'hook_resid_post', type: 'add', vector: 0 } } };
    expect(posterQrLink(dose, PREFIX).omitted).toEqual(['CAA happy vs sad (TinyStories)']);
  });

  it('two vectors of one name (built at two layers), each used: the name is given once (fitapply 3: slide 1 named it twice)', () => {
    const e = steered(64, [2, 3]);
    const twin: Experiment = { ...e, vectors: [e.vectors[0], { ...e.vectors[0], hook: 'blocks.2.hook_resid_post' }], interventions: [e.interventions[0], { ...e.interventions[1], vector: 1 }] };
    const { url, omitted } = posterQrLink(twin, PREFIX);
    expect(omitted).toEqual(['CAA happy vs sad (TinyStories)']);
    expect(qrVersion(url)).toBeLessThanOrEqual(QR_MAX_VERSION);
  });

  it('interventions without a vector read back field for field, their default fields left out of the link', () => {
    const base = readExperiment(JSON.stringify(LINK_BASE));
    const e: Experiment = { ...base, interventions: [
      { enabled: true, hook: 'blocks.1.hook_resid_post', type: 'ablate', dose: 0, rotateBy: 'theta', mode: 'zero', vector: null, source: '', head: null, positions: [3, 4], steps: null, sae: null },
      { enabled: false, hook: 'blocks.2.attn.hook_z', type: 'ablate', dose: 0, rotateBy: 't', mode: 'zero', vector: null, source: '', head: 2, positions: 'all', steps: { start: 1, end: null }, sae: null },
    ] };
    const { url, omitted } = posterQrLink(e, PREFIX);
    expect(omitted).toEqual([]);
    expect(experimentFromHash(url.slice(PREFIX.length))).toEqual(e);
    expect(url.length).toBeLessThan(PREFIX.length + experimentHash(e, { short: true }).hash.length);
  });

  it('qrVersion is the qrcode library\'s version, and Infinity past what a code holds', () => {
    expect(qrVersion('https://a.b/')).toBe(1);
    expect(qrVersion('x'.repeat(5000))).toBe(Infinity);
  });
});
