/**
 * A workbench state with a non-default value in every store field that belongs to the experiment
 * (lib/experiment_state.ts EXPERIMENT_KEYS) and one intervention of every kind: add,
 * add_norm_preserving, rotate, ablate, patch, SAE steer, SAE clamp. Shared by the capture/apply
 * round trip and the poster-mode exit test.
 */
import type { AppState } from '../../app/store';
import type { LibraryEntry } from '../../app/store/vectors';
import type { InterventionDraft } from '../../app/store/steering';
import type { ExperimentKey } from '../../app/lib/experiment_state';

export const SAE_ID = 'sae-loaded-1';
export const SAE_ORIGIN = { kind: 'url' as const, url: 'https://example.org/sae/', label: 'relu SAE' };
export const SAE_INFO = { id: SAE_ID, label: 'relu SAE', cfg: { hookName: 'blocks.2.hook_resid_post' } } as unknown as AppState['saes'][number];

const happy: LibraryEntry = {
  id: 'v-happy', name: 'CAA happy vs sad', vector: Float32Array.from({ length: 8 }, (_, i) => Math.fround((i - 3.5) / 7)), dModel: 8,
  hook: 'blocks.3.hook_resid_post', model: 'stories260K', createdAt: '2026-11-30T15:00:00.000Z',
  provenance: { method: 'caa', position: 'last', positive: ['happy'], negative: ['sad'] }, alpha: 6,
};
const imported: LibraryEntry = {
  id: 'v-file', name: 'girl.npy', vector: Float32Array.from({ length: 8 }, (_, i) => Math.fround(i * 0.25)), dModel: 8,
  hook: null, model: null, createdAt: '2026-12-01T09:00:00.000Z', provenance: { method: 'file', position: '', positive: [], negative: [] },
  file: 'girl.npy', alpha: -2.5,
};

const base = { rotateBy: 'theta' as const, mode: 'zero' as const, source: '', head: null, positions: 'all' as const, steps: null };
const interventions: InterventionDraft[] = [
  { ...base, id: 101, enabled: true, hook: 'blocks.3.hook_resid_post', type: 'add', dose: 6, vectorId: 'v-happy', positions: [2, 5] },
  { ...base, id: 102, enabled: false, hook: 'blocks.1.hook_resid_post', type: 'add_norm_preserving', dose: 3, vectorId: 'v-file', steps: { start: 1, end: null } },
  { ...base, id: 103, enabled: true, hook: 'blocks.2.hook_resid_mid', type: 'rotate', dose: 0.5, rotateBy: 't', vectorId: 'v-happy', positions: { start: 1, end: 4 } },
  { ...base, id: 104, enabled: true, hook: 'blocks.0.attn.hook_z', type: 'ablate', dose: 0, mode: 'project', vectorId: 'v-file', head: 1, steps: { start: 0, end: 3 } },
  { ...base, id: 105, enabled: true, hook: 'blocks.1.hook_resid_pre', type: 'patch', dose: 1, mode: 'project', vectorId: null, source: 'Lily and dad went to the park.', positions: [4] },
  { ...base, id: 106, enabled: true, hook: 'blocks.2.hook_resid_post', type: 'add', dose: 4, vectorId: null, saeFeature: { sae: SAE_ID, feature: 7 } },
  { ...base, id: 107, enabled: true, hook: 'blocks.2.hook_resid_post', type: 'sae_clamp', dose: 2.5, vectorId: null, saeFeature: { sae: SAE_ID, feature: 17 }, positions: 'prompt' },
];

/** Every EXPERIMENT_KEYS field set away from its default (the round trip test checks each differs). */
export const EVERY_FIELD: Pick<AppState, ExperimentKey> = {
  lastLoad: { source: { kind: 'url', url: 'models/stories260K/', label: 'stories260K' }, options: {} as NonNullable<AppState['lastLoad']>['options'] },
  prompt: 'The little girl felt very',
  chatTemplate: true,
  system: 'You are a careful agent.',
  enableThinking: false,
  tools: [{ type: 'function', function: { name: 'send_email', description: 'Send an email', parameters: { type: 'object', properties: { to: { type: 'string' } } } } }],
  good: { mode: 'text', value: ' happy' },
  bad: { mode: 'ids', value: '274 | 317 287' },
  generation: { maxNewTokens: 17, temperature: 0.7, topK: 5, seed: 42 },
  vectors: [happy, imported],
  interventions,
  saes: [SAE_INFO],
  saeOrigins: { [SAE_ID]: SAE_ORIGIN },
  sweepSettings: { layers: '1-3', doses: '-4,0,4', site: 'hook_resid_mid', type: 'rotate', vectorId: 'v-file' },
  view: 'sinks',
  showTables: true,
  showDifference: true,
  sinkEps: 0.45,
  heatmapScale: 'max',
  activationsHook: 'blocks.2.attn.hook_z',
  tokenSelection: { start: 1, end: 3 },
  // model B (v3): put back by loading it (actions/experiment.ts ensureModelB), as lastLoad is
  modelB: { label: 'stories260K-happy-ft', source: { kind: 'url', url: 'models/stories260K-happy-ft/', label: 'stories260K-happy-ft' }, options: {}, status: 'ready', info: null, progress: null },
};
