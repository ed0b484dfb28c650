/**
 * The short experiment link a poster's QR code carries (`#q=`): the experiment written as its
 * difference from a frozen base experiment, so the QR code of an experiment close to the default
 * holds a few dozen characters instead of ~600 (trials found slide 1's code too dense to scan from
 * a poster's distance). Objects are compared key by key; arrays and other values are replaced whole;
 * a key the base has and the experiment lacks is listed under "~".
 */

/**
 * The base every `#q=` link is a difference from. FROZEN: printed posters decode against it, so
 * never edit it (a new base needs a new hash key). It is the workbench's default experiment of format
 * version 2.
 */
export const LINK_BASE: Readonly<Record<string, unknown>> = Object.freeze({
  format: 'branchpoint-experiment', version: 2, model: { kind: 'bundled', name: 'stories260K' },
  prompt: 'Lily and Tom went to the park. Lily gave the ball to', chatTemplate: false, tools: [],
  good: { mode: 'text', value: ' Tom' }, bad: { mode: 'text', value: ' Lily' },
  generation: { maxNewTokens: 32, temperature: 0, topK: 0, seed: 0 }, vectors: [], interventions: [], saes: [],
  view: { name: 'margins', showDifference: false, showTables: false, sinkEps: 0.3, heatmapScale: 'robust', hook: 'blocks.0.hook_resid_post', selection: null,
    sweep: { layers: 'all', doses: '-8,-4,-2,0,2,4,8', site: 'hook_resid_post', type: 'add', vector: null } },
});

const REMOVED = '~';
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** What `value` changes of `base` (JSON values): the differing keys, nested objects as their own differences. */
export function linkDelta(base: Obj, value: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(value)) {
    if (k in base && same(base[k], v)) continue;
    out[k] = isObj(base[k]) && isObj(v) ? linkDelta(base[k] as Obj, v) : v;
  }
  const removed = Object.keys(base).filter((k) => !(k in value));
  if (removed.length) out[REMOVED] = removed;
  return out;
}

/** `base` with `delta` (from linkDelta) applied: the value it was taken from. */
export function applyLinkDelta(base: Obj, delta: Obj): Obj {
  const out: Obj = { ...base };
  for (const [k, d] of Object.entries(delta)) {
    if (k === REMOVED) continue;
    out[k] = isObj(base[k]) && isObj(d) ? applyLinkDelta(base[k] as Obj, d) : d;
  }
  for (const k of Array.isArray(delta[REMOVED]) ? (delta[REMOVED] as string[]) : []) delete out[k];
  return out;
}
