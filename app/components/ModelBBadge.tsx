import { useStore } from '../store';

/** Model B beside model A (the Compare view), named in the top bar while one is loaded or loading. */
export function ModelBBadge() {
  const b = useStore((s) => s.modelB);
  if (!b) return null;
  const text = b.status === 'loading' ? `loading ${b.label}…` : b.label;
  return (
    <div className="badge badge-model-b" data-testid="model-b-badge" data-status={b.status} title={b.info ? `model B: ${b.info.modelType}, ${b.info.nLayers} layers, d_model ${b.info.dModel} (compared with model A in the Compare view)` : 'model B (the Compare view)'}>
      <b>B</b> {text}
    </div>
  );
}
