import { useEffect, useRef, useState } from 'react';
import { useStore } from '../store';
import { experimentLink, openExperimentFile, saveExperimentFile } from '../actions/experiment';
import { backToExperiment } from '../actions/batch';
import { exportNnsightScript, openResultsFile } from '../actions/nnsight';
import { Banner } from './Banner';

/**
 * Share the experiment: copy its link (the whole experiment in the URL hash, vectors included when
 * small enough — otherwise the note says which are left out), save it as a file, open a file. Shows
 * the notice of the last restore (a damaged link, a newer version, a model that cannot be loaded) in
 * the one error Banner.
 */
/** How long the "Link copied" status stays (ms). */
const COPIED_STATUS_MS = 8000;

export function ExperimentBar({ onPoster }: { onPoster?: () => void }) {
  const notice = useStore((s) => s.experimentNotice);
  const setNotice = useStore((s) => s.setExperimentNotice);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const held = useStore((s) => s.batchReturn);
  const busy = useStore((s) => s.job !== null);
  const [copied, setCopied] = useState<string | null>(null);
  const input = useRef<HTMLInputElement | null>(null);
  const resultsInput = useRef<HTMLInputElement | null>(null);
  // The status describes the link copied then: it goes away after a while (a later edit makes a new link)
  useEffect(() => {
    if (!copied) return;
    const t = setTimeout(() => setCopied(null), COPIED_STATUS_MS);
    return () => clearTimeout(t);
  }, [copied]);
  const copy = async () => {
    const { url, missing } = experimentLink();
    try {
      await navigator.clipboard.writeText(url);
      setCopied(missing.length ? `Link copied, without the vector${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (too large for a link: save the file to share ${missing.length > 1 ? 'them' : 'it'}).` : 'Link copied: it opens this experiment and reruns it.');
    } catch {
      setCopied(`Copy this link: ${url}`);
    }
  };
  return (
    <div className="experiment-bar" data-testid="experiment-bar">
      <span className="label">Experiment</span>
      <button type="button" className="small" data-testid="copy-link" disabled={!ready} onClick={() => void copy()}>Copy link</button>
      <button type="button" className="small" data-testid="save-experiment" disabled={!ready} onClick={saveExperimentFile}>Save file</button>
      <button type="button" className="small" data-testid="open-experiment" onClick={() => input.current?.click()}>Open file…</button>
      <input
        ref={input} className="visually-hidden" type="file" accept=".json,application/json" data-testid="experiment-file" aria-label="experiment file"
        onChange={(e) => { const f = e.target.files?.[0]; e.target.value = ''; if (f) void openExperimentFile(f); }}
      />
      {onPoster && <button type="button" className="small" data-testid="poster-mode" onClick={onPoster}>Poster mode</button>}
      <button type="button" className="small" data-testid="export-nnsight" disabled={!ready} onClick={exportNnsightScript} title="A Python script for nnsight (REMOTE = False at its top; True runs it on NDIF) that writes a results file">Export nnsight script</button>
      <button type="button" className="small" data-testid="open-results" disabled={busy} onClick={() => resultsInput.current?.click()}>Open results…</button>
      <input
        ref={resultsInput} className="visually-hidden" type="file" accept=".json,application/json" data-testid="results-file" aria-label="results file"
        onChange={(e) => { const f = e.target.files?.[0]; e.target.value = ''; if (f) void openResultsFile(f); }}
      />
      {held && (
        <span className="hint" data-testid="batch-return">
          A batch row is open (its prompt and futures replaced yours).{' '}
          <button type="button" className="small" data-testid="batch-return-button" disabled={busy} onClick={() => void backToExperiment()}>Back to my experiment</button>
          {' '}<button type="button" className="small" data-testid="batch-return-keep" onClick={() => useStore.getState().setBatchReturn(null)} title="Keep the row’s prompt and futures; forget the experiment held for going back">Keep this</button>
        </span>
      )}
      {copied && <span className="hint" role="status" data-testid="link-status">{copied}</span>}
      {notice && <div className="experiment-notice"><Banner what={notice.what} why={notice.why} testId="experiment-notice" tone={notice.tone} onDismiss={() => setNotice(null)} /></div>}
    </div>
  );
}
