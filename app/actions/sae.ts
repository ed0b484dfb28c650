/**
 * The SAE view's actions: load an SAE (picked folder or file, Hub path), read the prompt's
 * features, open a feature, and place feature interventions (add the unit decoder row, or clamp
 * the feature) into the experiment's list.
 */
import { useStore } from '../store';
import type { PositionSelector, SaeSource } from '../../workers/protocol';
import type { ExperimentSae } from '../../workers/shared';
import { futureInput } from '../lib/futures';
import { runJob } from './job';
import { inOrder } from './worker';
import { currentIdentity } from './identity';

/** Picked or dropped files (a SAELens folder, or a params.npz) as an SAE source; dropped ones carry their path in the folder. */
export function saeSourceFromFiles(list: FileList | readonly { path: string; file: File }[]): SaeSource {
  const files = Array.from(list as ArrayLike<File | { path: string; file: File }>, (f) => (f instanceof File ? { path: f.webkitRelativePath || f.name, file: f } : f));
  const top = files.filter((f) => f.path.split('/').length <= 2);
  const name = files[0]?.path.split('/')[0] ?? 'SAE';
  return { kind: 'files', label: files.length === 1 ? name : `${name} (local folder)`, files: top };
}

/** Where an SAE came from, as an experiment names it: Hub repo + folder (no token), URL, or a local name. */
export function saeOrigin(source: SaeSource): ExperimentSae['source'] {
  switch (source.kind) {
    case 'hub': return { kind: 'hub', repo: source.repo, path: source.path, revision: source.revision ?? 'main', ...(source.endpoint ? { endpoint: source.endpoint } : {}) };
    case 'url': return { kind: 'url', url: source.url, ...(source.label ? { label: source.label } : {}) };
    case 'files': return { kind: 'local', name: source.label };
  }
}

/** Where each SAE loaded this session was read from (by id), picked files included, so a model reload can read it again. */
const sources = new Map<string, SaeSource>();

/** The source the SAE `id` was loaded from this session, or undefined. */
export function saeSourceOf(id: string): SaeSource | undefined {
  return sources.get(id);
}

/**
 * Loads an SAE and makes it the active one. @param hook for a bare Gemma Scope params.npz.
 * @returns its id, or null when it could not be loaded (the banner says why).
 */
export async function loadSae(source: SaeSource, hook?: string): Promise<string | null> {
  return runJob('sae', 'Loading the SAE', 'Could not load the SAE', async () => {
    const info = await inOrder((w) => w.loadSae(source, hook || undefined));
    sources.set(info.id, source);
    useStore.getState().addSae(info, saeOrigin(source));
    return info.id;
  });
}

/** Reads the prompt's features with the active SAE (and, with both futures set, the margin attributions). */
export async function readFeatures(): Promise<void> {
  const s = useStore.getState();
  const id = s.activeSae;
  if (!id) return;
  await runJob('sae', 'Reading SAE features', 'Could not read the SAE features', async () => {
    let good: string | null = null, bad: string | null = null;
    const req = { prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, topK: s.saeTopK, pinned: s.pinnedFeatures };
    let margin = {};
    if (s.good.value.trim() && s.bad.value.trim()) {
      margin = { good: futureInput(s.good), bad: futureInput(s.bad) };
      good = s.good.value; bad = s.bad.value;
    }
    const analysis = await inOrder((w) => w.analyseSae(id, { ...req, ...margin }));
    const st = useStore.getState();
    st.setSaeResult({ saeId: id, analysis, prompt: s.prompt, modelLabel: st.modelLabel ?? 'the model', computedWith: currentIdentity(), good, bad });
    st.setPromptTokens({ ids: analysis.ids, tokens: analysis.tokens, prefix: analysis.sharedPrefix?.ids.length ?? 0 });
  });
}

/** Pins or unpins a feature and refreshes the heatmap rows. */
export async function togglePin(feature: number): Promise<void> {
  useStore.getState().togglePinned(feature);
  if (useStore.getState().saeResult) await readFeatures();
}

/** Opens a feature in the feature panel: its decoder lens, cosines with the library's vectors, link. */
export async function openFeature(feature: number, position: number | null = null): Promise<void> {
  const s = useStore.getState();
  const id = s.activeSae;
  if (!id) return;
  await runJob('sae', `Feature ${feature}`, `Could not open feature ${feature}`, async () => {
    const vectors = s.vectors.map((v) => ({ name: v.name, vector: v.vector }));
    const info = await inOrder((w) => w.saeFeature(id, feature, vectors));
    useStore.getState().setOpenFeature({ info, position });
  });
}

/**
 * Adds a feature intervention at the SAE's hook: `add` steers along W_dec[f]/‖W_dec[f]‖ with dose α;
 * `sae_clamp` sets the feature to c, keeping the SAE's error term. It opens in the editor, where
 * its positions and step window can be changed like any intervention's.
 */
export function placeFeature(type: 'add' | 'sae_clamp', feature: number, dose: number, positions: PositionSelector): number | null {
  const s = useStore.getState();
  const sae = s.saes.find((x) => x.id === s.activeSae);
  if (!sae) return null;
  const id = s.addIntervention({
    enabled: true, hook: sae.cfg.hookName, type, dose, rotateBy: 'theta', mode: 'project', vectorId: null,
    source: '', head: null, positions, steps: null, saeFeature: { sae: sae.id, feature },
  });
  // its number in the intervention list (#n), for the feedback beside the buttons
  return useStore.getState().interventions.findIndex((d) => d.id === id) + 1;
}
