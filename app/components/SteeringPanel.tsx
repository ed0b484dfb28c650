import { useStore } from '../store';
import { addDefaultIntervention, placeOnTokens } from '../actions/steering';
import { InterventionList } from './InterventionList';
import { InterventionEditor } from './InterventionEditor';

/** What to do with the tokens selected on the strip: steer them with a new intervention, or give them to the one open in the editor. */
function TokenSelectionBar() {
  const sel = useStore((s) => s.tokenSelection);
  const open = useStore((s) => s.selectedIntervention);
  const list = useStore((s) => s.interventions);
  const { setTokenSelection, updateIntervention } = useStore.getState();
  if (!sel) return null;
  const n = list.findIndex((d) => d.id === open) + 1;
  const text = sel.end - sel.start === 1 ? `Token ${sel.start}` : `Tokens ${sel.start}–${sel.end - 1}`;
  return (
    <div className="selection-bar row" data-testid="token-selection" data-start={sel.start} data-end={sel.end}>
      <span>{text} selected</span>
      <button type="button" className="small" data-testid="steer-selection" onClick={() => placeOnTokens(sel.start, sel.end)}>Add intervention here</button>
      {n > 0 && (
        <button type="button" className="small" data-testid="selection-to-open" onClick={() => { updateIntervention(open!, { positions: sel.end - sel.start === 1 ? [sel.start] : { start: sel.start, end: sel.end } }); setTokenSelection(null); }}>
          Set #{n}'s positions
        </button>
      )}
      <button type="button" className="small" aria-label="clear the token selection" onClick={() => setTokenSelection(null)}>×</button>
    </div>
  );
}

/** The interventions of the experiment: placing, listing (order of application) and editing them. */
export function SteeringPanel() {
  const ready = useStore((s) => s.modelStatus === 'ready');
  const open = useStore((s) => s.selectedIntervention);
  const count = useStore((s) => s.interventions.filter((d) => d.enabled).length);
  return (
    <section className="steering-panel" aria-label="interventions" data-testid="steering-panel">
      <div className="row">
        <h3>Interventions <span className="muted">({count} on)</span></h3>
        <button type="button" className="small" data-testid="add-intervention" disabled={!ready} onClick={addDefaultIntervention}>+ Add</button>
      </div>
      <p className="hint">Applied in list order; at the same hook each acts on the output of those above it. Analyse and Generate run with and without them.</p>
      <TokenSelectionBar />
      <InterventionList />
      <InterventionEditor key={open ?? 0} />
    </section>
  );
}
