import { useStore } from '../store';
import { reloadModel } from '../actions/model';
import { Banner } from './Banner';

/** Says that the GPU device was lost and why, with a button that loads the model again on a fresh device. */
export function DeviceLostBanner() {
  const reason = useStore((s) => s.deviceLost);
  const busy = useStore((s) => s.job !== null);
  if (reason === null) return null;
  return (
    <Banner what={`GPU device lost (${reason})`} why="Every model call fails until the model is loaded again on a fresh device. Results on display stay." testId="device-lost"
      action={<button type="button" className="primary" data-testid="reload-model" disabled={busy} onClick={() => void reloadModel()}>Reload model</button>} />
  );
}
