/**
 * The logit error of quantised weights against float32, measured when the user asks for it (the
 * model info's "Measure" button) rather than at every load: a quantised load then costs one
 * model's compute, not two (engine/model/quant_error.ts). The worker keeps the measurement.
 */
import { useStore } from '../store';
import { runJob } from './job';
import { inOrder } from './worker';

/** Measures the loaded model's logit error in the worker and shows it in the model info (the banner says why when it cannot). */
export async function measureLogitError(): Promise<void> {
  const info = useStore.getState().info;
  await runJob('load', 'Measuring the logit error against float32', 'Could not measure the logit error', async () => {
    const logitError = await inOrder((w) => w.measureLogitError());
    const s = useStore.getState();
    // a model loaded meanwhile has its own (unmeasured) storage
    if (s.info === info && s.info?.weights) s.loadFinished({ ...s.info, weights: { ...s.info.weights, logitError } });
  });
}
