/**
 * Warnings the engine attached to a result (Analysis.warnings, Generation.warnings): things about
 * the inputs that did not stop the run but change what it means (a second BOS from a prompt that
 * already starts with "<s>", a tokenizer much smaller than the embedding matrix).
 */
export function InputWarnings({ warnings, testId }: { warnings?: readonly string[]; testId: string }) {
  if (!warnings?.length) return null;
  return (
    <ul className="input-warnings" role="status" data-testid={testId}>
      {warnings.map((w) => <li key={w}>Warning: {w}</li>)}
    </ul>
  );
}
