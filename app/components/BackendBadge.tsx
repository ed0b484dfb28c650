import { useStore } from '../store';

/** The model on duty and where it runs: the WebGPU adapter, or "CPU fallback" with the reason. */
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
        {info.nKvHeads !== info.nHeads ? ` (${info.nKvHeads} KV)` : ''} · d_model {info.dModel} · context {info.nCtx}
      </div>
      <div className={`badge ${gpu ? 'badge-gpu' : 'badge-cpu'}`} data-testid="backend-badge" data-kind={info.backend.kind} title={info.backend.description}>
        {gpu ? (/webgpu/i.test(info.backend.description) ? info.backend.description : `WebGPU · ${info.backend.description}`) : `CPU fallback · ${info.backend.description}`}
      </div>
    </div>
  );
}
