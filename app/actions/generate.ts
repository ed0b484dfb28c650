import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { GenerateRequest, TokenEvent } from '../../workers/protocol';
import { futureInput } from '../lib/futures';
import { runJob } from './job';
import { inOrder } from './worker';

/** Generates with the experiment's settings, streaming tokens and margins into the store. */
export async function generate(): Promise<void> {
  const s = useStore.getState();
  await runJob('generate', 'Generating', 'Could not generate', async () => {
    const g = s.generation;
    const req: GenerateRequest = {
      prompt: s.prompt, chatTemplate: s.chatTemplate, good: futureInput(s.good), bad: futureInput(s.bad),
      maxNewTokens: g.maxNewTokens, temperature: g.temperature, topK: g.topK, seed: g.seed,
    };
    s.startGeneration({ modelLabel: s.modelLabel ?? '', prompt: s.prompt, maxNewTokens: g.maxNewTokens });
    const onToken = Comlink.proxy((e: TokenEvent) => useStore.getState().addToken(e));
    const final = await inOrder((w) => w.generate(req, onToken));
    useStore.getState().finishGeneration(final);
  }, { cancellable: true });
}
