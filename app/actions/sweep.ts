import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { Progress, SweepRequest } from '../../workers/protocol';
import { futureInput } from '../lib/futures';
import { parseIndexList, parseNumberList } from '../lib/lists';
import { runJob } from './job';
import { inOrder } from './worker';
import { currentIdentity } from './identity';

/**
 * Runs the dose–response sweep as set up in its view (DESIGN.md §3): for each layer and dose, the
 * margin and the KL of the next-token distribution from the unsteered one. Progress counts forward
 * passes; Cancel stops it between them and keeps the sweep on display.
 */
export async function runSweep(): Promise<void> {
  await runJob('sweep', 'Dose–response sweep', 'Could not run the dose–response sweep', async () => {
    const s = useStore.getState();
    const nLayers = s.info?.nLayers ?? 0;
    const set = s.sweepSettings;
    const layers = parseIndexList(set.layers, nLayers, 'layers');
    const doses = parseNumberList(set.doses, 'doses');
    const v = s.vectors.find((x) => x.id === set.vectorId);
    if (!v) throw new Error('pick a steering vector for the sweep (build or import one in the Vectors tab)');
    const req: SweepRequest = {
      prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, enableThinking: s.enableThinking, good: futureInput(s.good), bad: futureInput(s.bad),
      template: { hook: `blocks.{l}.${set.site}`, type: set.type, vector: v.vector }, layers, doses,
    };
    s.setJobSteps({ done: 0, total: layers.length * doses.length });
    const onProgress = Comlink.proxy((p: Progress) => useStore.getState().setJobSteps(p));
    const result = await inOrder((w) => w.sweep(req, onProgress));
    useStore.getState().setSweep({ result, modelLabel: s.modelLabel ?? '', computedWith: currentIdentity(), prompt: s.prompt, good: s.good.value, bad: s.bad.value, type: set.type, vectorId: v.id, vectorName: v.name, pickedId: null });
  }, { cancellable: true });
}
