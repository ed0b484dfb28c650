import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { GenerateRequest, SpecRequest, TokenEvent } from '../../workers/protocol';
import type { RunName } from '../store/results';
import { futureInput } from '../lib/futures';
import { specRequest } from '../lib/specs';
import { relabelJob, runJob } from './job';
import { inOrder } from './worker';
import { frameBatcher } from '../lib/frame_batch';
import { currentIdentity } from './identity';
import { turnOf } from '../lib/stale';

/**
 * Generates with the experiment's settings, streaming tokens and margins into the store. With
 * enabled interventions it generates twice from the same seed, steered and then unsteered, so the
 * two texts and margin curves can be compared.
 */
export async function generate(): Promise<void> {
  const s = useStore.getState();
  await runJob('generate', 'Generating', 'Could not generate', async () => {
    const g = s.generation;
    const req: GenerateRequest = {
      prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, good: futureInput(s.good), bad: futureInput(s.bad),
      maxNewTokens: g.maxNewTokens, temperature: g.temperature, topK: g.topK, seed: g.seed,
    };
    const { specs, specLabels, applied } = specRequest(s.interventions, s.vectors);
    if (applied.length) relabelJob('Generating under the interventions');
    // The generation on display is replaced when the first token arrives, so one the worker refuses leaves it in place.
    let shown = false;
    const show = () => {
      if (shown) return;
      shown = true;
      useStore.getState().startGeneration({ modelLabel: s.modelLabel ?? '', computedWith: currentIdentity(), prompt: s.prompt, ...turnOf(s), maxNewTokens: g.maxNewTokens, steering: applied });
      if (applied.length) useStore.getState().startSteeredRun();
    };
    const run = async (name: RunName, r: GenerateRequest & SpecRequest) => {
      // Tokens reach the store once per animation frame: the worker streams faster than the page repaints.
      const batch = frameBatcher<TokenEvent>((events) => { show(); useStore.getState().addTokens(events, name); });
      const onToken = Comlink.proxy((e: TokenEvent) => batch.push(e));
      try {
        const final = await inOrder((w) => w.generate(r, onToken));
        batch.flush();
        show();
        useStore.getState().finishGeneration(final, name);
        return final;
      } finally {
        batch.flush();
      }
    };
    if (applied.length) {
      // Steered first: a spec the worker refuses (a step window past the end) fails before anything runs.
      const steered = await run('steered', { ...req, specs, specLabels });
      if (steered.stop === 'cancelled') return;
      relabelJob('Generating without the interventions (same seed)');
    }
    await run('unsteered', req);
  }, { cancellable: true });
}
