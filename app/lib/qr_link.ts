/**
 * The link a poster slide's QR code carries for the user's own experiment, kept sparse enough to
 * scan from a poster's distance: trials found slide 1's code dense once the experiment had
 * interventions, whose vectors' values (d_model numbers each) are most of the link.
 */
import QRCode from 'qrcode';
import { readExperiment, type Experiment } from '../../workers/shared';
import { experimentHash, qrExperiment } from './experiment_state';
import { LINK_BASE } from './link_delta';

/**
 * The densest code a slide shows: QR version 13 (69 modules a side; at error correction L about
 * 410 characters of link). Poster mode draws the code 306–380 px wide: ≥ 4.4 px a module, against
 * 3.4 px for the version-18 code trials found too dense.
 */
export const QR_MAX_VERSION = 13;

/** The QR version (1–40; modules a side = 17 + 4·version) of `text` at error correction L (qrcode library); Infinity when it does not fit. */
export function qrVersion(text: string): number {
  try {
    return QRCode.create(text, { errorCorrectionLevel: 'L' }).version;
  } catch {
    return Infinity;
  }
}

type Fields = Record<string, unknown>;

/** An intervention's fields as the experiment format fills them in when absent (read from its schema, so they never drift). */
let defaults: Fields | null = null;
function interventionDefaults(): Fields {
  defaults ??= readExperiment(JSON.stringify({ ...LINK_BASE, interventions: [{ hook: 'blocks.0.hook_resid_post', type: 'add' }] })).interventions[0] as unknown as Fields;
  return defaults;
}

/** `e` with each intervention's fields that equal the format's defaults left out: it reads back as the same experiment. */
function withoutDefaults(e: Experiment): Experiment {
  const dflt = interventionDefaults();
  const interventions = e.interventions.map((d) => Object.fromEntries(Object.entries(d).filter(([k, v]) => k === 'hook' || k === 'type' || JSON.stringify(v) !== JSON.stringify(dflt[k]))));
  return { ...e, interventions } as Experiment;
}

/** The names of the vectors experiment `e` runs with: those of its enabled interventions, and the sweep's when the Dose–response view is open. */
function usedVectors(e: Experiment): Set<string> {
  const at = e.interventions.flatMap((d) => (d.enabled && d.vector !== null ? [d.vector] : []));
  if (e.view.name === 'dose' && e.view.sweep?.vector != null) at.push(e.view.sweep.vector);
  return new Set(at.map((i) => e.vectors[i]?.name).filter((n): n is string => n !== undefined));
}

/**
 * The short link (`#q=`, lib/link_delta.ts) of experiment `e` after `prefix` (origin, path and
 * query), without the vectors' contrastive texts (qrExperiment) and the interventions' default
 * fields. When that code would be denser than QR_MAX_VERSION the vectors are left out, first their
 * values (the entries keep their names, which a scan then lists to build or import:
 * actions/experiment.ts restoreExperiment), then, if still too dense, whole (the interventions keep
 * every setting but their vector) — the sparsest of these when none fits.
 * @returns the link, and the names (each once) of the vectors it leaves out that the scanned experiment would
 *   miss: used by an enabled intervention or by the open Dose–response view's sweep (a library
 *   vector nothing uses is left out without a word: the scan steers the same without it).
 */
export function posterQrLink(e: Experiment, prefix: string): { url: string; omitted: string[] } {
  const light = withoutDefaults(qrExperiment(e));
  const full = experimentHash(light, { short: true });
  const used = usedVectors(e);
  const first = { url: prefix + full.hash, omitted: [...new Set(full.missing.filter((n) => used.has(n)))] };
  if (!light.vectors.length || qrVersion(first.url) <= QR_MAX_VERSION) return first;
  const names = [...new Set(light.vectors.map((v) => v.name).filter((n) => used.has(n)))];
  const named = { ...light, vectors: light.vectors.map((v) => ({ name: v.name, hook: null, model: null, dModel: v.dModel, provenance: { method: v.provenance.method, position: '', positive: [], negative: [] }, createdAt: '', values: null })) };
  const second = { url: prefix + experimentHash(named, { short: true }).hash, omitted: names };
  if (qrVersion(second.url) <= QR_MAX_VERSION) return second;
  const dflt = interventionDefaults();
  const bare = withoutDefaults({ ...light, vectors: [], interventions: light.interventions.map((d) => ({ ...dflt, ...d, vector: null })), view: { ...light.view, sweep: light.view.sweep && { ...light.view.sweep, vector: null } } });
  return { url: prefix + experimentHash(bare, { short: true }).hash, omitted: names };
}
