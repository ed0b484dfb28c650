/**
 * Why the report's Changeable answer (the intervention window, DESIGN.md §3) is missing, naming only
 * what the user has not done: place an intervention, tick "Changeable", or, when both are done now,
 * run the report again (it ran before they were).
 * @param ticked whether the report's Changeable part is ticked. @param nInterventions interventions placed.
 */
export function changeableMissing(ticked: boolean, nInterventions: number): string {
  const place = 'place an intervention (Interventions list, left)';
  if (!ticked && nInterventions === 0) return `${place} and tick “Changeable”`;
  if (!ticked) return 'tick “Changeable”';
  if (nInterventions === 0) return place;
  return 'the report ran before an intervention was placed and “Changeable” ticked: run it again';
}
