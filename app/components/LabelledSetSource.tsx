import { useState } from 'react';
import { useStore } from '../store';
import { loadProbeExample, loadProbeFile, PROBE_EXAMPLES } from '../actions/probe';
import { FilePickButton } from './FilePickButton';

/** The Example list's value while the set loaded came from a file. */
const FROM_FILE = '';

/**
 * Where the labelled prompt set comes from — a shipped example or a file (.json, .jsonl, .csv) —
 * loaded into the probe settings, so the Probes view and the report's prompt set are one set.
 * The Example list shows the set loaded now: its example, or "— from a file —" for a file the user
 * opened, until the user picks another example to load.
 * Test ids are `${prefix}-example`, `-load-example`, `-file`, `-source`.
 */
export function LabelledSetSource({ prefix }: { prefix: string }) {
  const source = useStore((s) => s.probeSettings.source);
  // an example picked (not yet loaded) while `under` was the set loaded
  const [picked, setPicked] = useState<{ file: string; under: string } | null>(null);
  const loaded = PROBE_EXAMPLES.some((x) => x.file === source) ? source : source ? FROM_FILE : PROBE_EXAMPLES[0].file;
  const example = picked && picked.under === source ? picked.file : loaded;
  return (
    <div className="row">
      <label>Example
        <select data-testid={`${prefix}-example`} value={example} onChange={(e) => setPicked({ file: e.target.value, under: source })}>
          {example === FROM_FILE && <option value={FROM_FILE}>— from a file —</option>}
          {PROBE_EXAMPLES.map((x) => <option key={x.file} value={x.file}>{x.name}</option>)}
        </select>
      </label>
      <button type="button" className="small" data-testid={`${prefix}-load-example`} disabled={example === FROM_FILE} onClick={() => void loadProbeExample(example)}>Load</button>
      {/* a button and the set's name, as the other file pickers (a native file input was cut to “No fi…osen”) */}
      <FilePickButton label="Open a set (.json, .jsonl, .csv)…" accept=".json,.jsonl,.ndjson,.csv" testId={`${prefix}-file`} onFile={(f) => void loadProbeFile(f)} />
      <span className="muted" data-testid={`${prefix}-source`}>{source ? `from ${source}` : 'no set loaded'}</span>
    </div>
  );
}
