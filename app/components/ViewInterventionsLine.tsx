import { useStore } from '../store';
import { VIEWS, type ViewName } from '../views/registry';

/** The registry's one line (views/registry.ts `interventions`) saying whether the view runs with the experiment's enabled interventions. */
export function interventionsLine(view: ViewName): { applies: 'yes' | 'no' | 'option'; line: string } {
  return VIEWS.find((v) => v.name === view)!.interventions;
}

/**
 * Above every view: one line saying whether the intervention list applies to what the view runs
 * (Patching, the sweep, probes … run without it), and how many interventions are on now — or, for a
 * view that runs with them (applies 'yes'), that none is on, so its "steered" run is the unsteered one;
 * a view where it is an option (Branches, Probes, the report, the window's one picked) adds nothing then.
 */
export function ViewInterventionsLine({ view }: { view: ViewName }) {
  const on = useStore((s) => s.interventions.filter((d) => d.enabled).length);
  const { applies, line } = interventionsLine(view);
  return (
    <p className={`hint view-interventions${applies === 'no' && on > 0 ? ' warn' : ''}`} data-testid="view-interventions" data-applies={applies}>
      {line}{on > 0 ? ` (${on} enabled now.)` : applies === 'yes' ? ' (None is enabled now: the run is unsteered.)' : ''}
    </p>
  );
}
