import { useStore } from '../store';
import type { ModelInfo } from '../../workers/protocol';
import { WeightStorageInfo } from './WeightStorage';

/** The backend's own description ("WebGPU: <adapter>", "CPU backend (fallback: <reason>)"), prefixed with its kind when it does not say it. */
function badgeText({ kind, description }: ModelInfo['backend']): string {
  const name = kind === 'webgpu' ? 'WebGPU' : 'CPU';
  return description.toLowerCase().includes(name.toLowerCase()) ? description : `${name} · ${description}`;
}

/** The model on duty and where it runs: the WebGPU adapter, or the CPU backend (with the reason when it is a fallback). */
export function BackendBadge() {
  const info = useStore((s) => s.info);
  const status = useStore((s) => s.modelStatus);
  const label = useStore((s) => s.modelLabel);
  if (!info) {
    const text = status === 'loading' ? `loading ${label}…` : status === 'failed' ? 'no model loaded (the last load failed)' : 'no model loaded';
    return <div className="badge badge-none" data-testid="model-status">{text}</div>;
  }
  const gpu = info.backend.kind === 'webgpu';
  return (
    <div className="model-status" data-testid="model-status">
      <div className="model-name" data-testid="model-info" title={info.hookNames.length ? `${info.hookNames.length} hook points` : undefined}>
        <strong>{info.label}</strong> · {info.modelType} · {info.nLayers} layers · {info.nHeads} heads
        {info.nKvHeads !== info.nHeads ? ` (${info.nKvHeads} KV)` : ''} · d_model {info.dModel} · context {info.contextLength < info.nCtx ? `${info.contextLength} of ${info.nCtx}` : info.nCtx}
      </div>
      <div className={`badge ${gpu ? 'badge-gpu' : 'badge-cpu'}`} data-testid="backend-badge" data-kind={info.backend.kind} title={info.backend.description}>
        {badgeText(info.backend)}
      </div>
      <WeightStorageInfo weights={info.weights} />
    </div>
  );
}
