import { useState } from 'react';
import { useStore } from '../store';
import { loadProbeExample, loadProbeFile, PROBE_EXAMPLES } from '../actions/probe';
import { FilePickButton } from './FilePickButton';

/**
 * Where the labelled prompt set comes from — a shipped example or a file (.json, .jsonl, .csv) —
 * loaded into the probe settings, so the Probes view and the report's prompt set are one set.
 * Test ids are `${prefix}-example`, `-load-example`, `-file`, `-source`.
 */
export function LabelledSetSource({ prefix }: { prefix: string }) {
  const source = useStore((s) => s.probeSettings.source);
  const [example, setExample] = useState(PROBE_EXAMPLES[0].file);
  return (
    <div className="row">
      <label>Example
        <select data-testid={`${prefix}-example`} value={example} onChange={(e) => setExample(e.target.value)}>
          {PROBE_EXAMPLES.map((x) => <option key={x.file} value={x.file}>{x.name}</option>)}
        </select>
      </label>
      <button type="button" className="small" data-testid={`${prefix}-load-example`} onClick={() => void loadProbeExample(example)}>Load</button>
      {/* a button and the set's name, as the other file pickers (a native file input was cut to “No fi…osen”) */}
      <FilePickButton label="Open a set (.json, .jsonl, .csv)…" accept=".json,.jsonl,.ndjson,.csv" testId={`${prefix}-file`} onFile={(f) => void loadProbeFile(f)} />
      <span className="muted" data-testid={`${prefix}-source`}>{source ? `from ${source}` : 'no set loaded'}</span>
    </div>
  );
}
