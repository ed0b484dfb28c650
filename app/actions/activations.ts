/** The activations view's actions: capture the chosen hook, or the whole residual stream, for the analysed prompt. */
import { useStore } from '../store';
import { download } from '../lib/export';
import { writeNpyArray } from '../../workers/shared';
import { runJob } from './job';
import { inOrder } from './worker';

/** Captures the view's hook (store `activationsHook`) for the analysed prompt, with that analysis's interventions. */
export async function captureActivations(): Promise<void> {
  const s = useStore.getState();
  const r = s.result, hook = s.activationsHook;
  if (!r) return;
  await runJob('activations', `Capturing ${hook}`, `Could not capture ${hook}`, async () => {
    const [c] = await inOrder((w) => w.activations([hook]));
    useStore.getState().setCaptured({ ...c, tokens: r.analysis.tokens, model: r.modelLabel, prompt: r.prompt });
  });
}

/** Saves blocks.{l}.hook_resid_post of every layer as one float32 [n_layers, n_tokens, d_model] .npy. */
export async function saveResidualStream(): Promise<void> {
  const s = useStore.getState();
  const r = s.result, info = s.info;
  if (!r || !info) return;
  await runJob('activations', 'Capturing the residual stream', 'Could not capture the residual stream', async () => {
    const names = Array.from({ length: info.nLayers }, (_, l) => `blocks.${l}.hook_resid_post`);
    const got = await inOrder((w) => w.activations(names));
    const [T, D] = got[0].shape;
    const stack = new Float32Array(info.nLayers * T * D);
    got.forEach((g, l) => stack.set(g.data, l * T * D));
    download(`resid_post-${r.modelLabel}.npy`, new Blob([writeNpyArray(stack, [info.nLayers, T, D]) as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }));
  });
}
