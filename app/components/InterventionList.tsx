import { useStore } from '../store';
import { doseText, positionsText, stepsText } from '../lib/steered';
import { needsVector } from '../lib/specs';

/**
 * The experiment's interventions in order of application, each with enable/disable, move up/down,
 * open in the editor and delete. At a shared hook each acts on the output of the ones above it.
 */
export function InterventionList() {
  const list = useStore((s) => s.interventions);
  const vectors = useStore((s) => s.vectors);
  const selected = useStore((s) => s.selectedIntervention);
  const { updateIntervention, removeIntervention, moveIntervention, selectIntervention } = useStore.getState();
  if (!list.length) return <p className="hint" data-testid="no-interventions">No interventions: click a cell of the margin heatmap, select tokens above, or add one.</p>;
  return (
    <ol className="intervention-list" data-testid="intervention-list">
      {list.map((d, i) => {
        const n = i + 1;
        const before = list.slice(0, i).map((x, j) => ({ x, n: j + 1 })).filter(({ x }) => x.enabled && x.hook === d.hook);
        const vector = vectors.find((v) => v.id === d.vectorId);
        return (
          <li key={d.id} className={`${d.id === selected ? 'open' : ''}${d.enabled ? '' : ' disabled'}`} data-testid={`intervention-${n}`} data-enabled={d.enabled ? 'true' : 'false'}>
            <input type="checkbox" aria-label={`enable intervention #${n}`} data-testid={`intervention-${n}-enabled`} checked={d.enabled} onChange={(e) => updateIntervention(d.id, { enabled: e.target.checked, offReason: undefined, autoOff: undefined, refused: undefined })} />
            <button type="button" className="intervention-summary" data-testid={`intervention-${n}-open`} onClick={() => selectIntervention(d.id === selected ? null : d.id)} aria-expanded={d.id === selected}>
              <strong>#{n}</strong> {d.type} {doseText(d)} <span className="mono">{d.hook}</span>
              <span className="muted"> · {positionsText(d.positions)} · {stepsText(d.steps)}{vector ? ` · ${vector.name}` : ''}{d.saeFeature ? ` · SAE feature ${d.saeFeature.feature}` : ''}{d.head !== null ? ` · head ${d.head}` : ''}</span>
              {d.offReason && !d.enabled && <span className="order-note" data-testid={`intervention-${n}-off-reason`}> · {d.refused ? 'cannot be switched on' : 'switched off for this model'}: {d.offReason}</span>}
              {d.saePending && <span className="order-note" data-testid={`intervention-${n}-sae-pending`}> · waiting for its SAE ({d.saePending.sae.label || d.saePending.sae.hook || 'not loaded'}): load its SAE in the SAE view</span>}
              {needsVector(d) && !vector && !d.saePending && !d.saeFeature && <span className="order-note" data-testid={`intervention-${n}-no-vector`}> · no vector yet: build or import one in Vectors</span>}
              {d.enabled && before.length > 0 && <span className="order-note" data-testid={`intervention-${n}-order`}> · applies after {before.map((b) => `#${b.n}`).join(', ')} at this hook</span>}
            </button>
            <span className="intervention-buttons">
              <button type="button" className="small" aria-label={`move intervention #${n} up`} disabled={i === 0} onClick={() => moveIntervention(d.id, -1)}>↑</button>
              <button type="button" className="small" aria-label={`move intervention #${n} down`} disabled={i === list.length - 1} onClick={() => moveIntervention(d.id, 1)}>↓</button>
              <button type="button" className="small" aria-label={`delete intervention #${n}`} data-testid={`intervention-${n}-delete`} onClick={() => removeIntervention(d.id)}>×</button>
            </span>
          </li>
        );
      })}
    </ol>
  );
}
