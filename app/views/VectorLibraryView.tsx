import { useEffect, useRef, useState } from 'react';
import { useStore } from '../store';
import type { VectorFormat, VectorRequest } from '../../workers/protocol';
import { buildVector, exportVector, importVectorFile, loadDefaultSet, DEFAULT_SET, type LibraryAddition } from '../actions/vectors';
import { applyVector, defaultHook, type AppliedVector } from '../actions/steering';
import { isPerHead, steerableHooks } from '../lib/hooks';
import type { LibraryEntry } from '../store/vectors';
import { waitingFor } from '../lib/job_rules';
import { useWaitingFor } from '../components/useWaitingFor';
import { NumberInput } from '../components/NumberInput';

const FORMATS: VectorFormat[] = ['npy', 'safetensors', 'json'];

/** Non-empty lines of a text box. */
const texts = (lines: readonly string[]) => lines.map((t) => t.trim()).filter(Boolean);

/** "Already in the library" for a build or import that found its vector there (null when it was added, or failed). */
function duplicateNote(r: LibraryAddition | null, rows: readonly LibraryEntry[]): string | null {
  if (!r || r.added) return null;
  return `“${r.entry.name}” is in the library already (row ${rows.findIndex((v) => v.id === r.entry.id) + 1}: the same definition and values), so it was not added again.`;
}

/** Builds a vector from the contrastive set being edited (CAA over the sets, or ActAdd from their first texts). */
function Builder({ onDone }: { onDone: (r: LibraryAddition | null) => void }) {
  const set = useStore((s) => s.contrastSet);
  const setSet = useStore((s) => s.setContrastSet);
  const info = useStore((s) => s.info);
  const job = useStore((s) => s.job);
  const { setPrompt, setFuture, setView } = useStore.getState();
  const good = useStore((s) => s.good);
  const bad = useStore((s) => s.bad);
  const [method, setMethod] = useState<VectorRequest['method']>('caa');
  const [hook, setHook] = useState(defaultHook);
  const [position, setPosition] = useState<'last' | 'mean' | 'marker'>('last');
  const [marker, setMarker] = useState('*');
  const [head, setHead] = useState<number | null>(null);
  useEffect(() => { void loadDefaultSet(); }, []);
  if (!set) return <p className="muted">Loading the default contrastive set ({DEFAULT_SET})…</p>;
  const pos = texts(set.positive), neg = texts(set.negative);
  const build = () => {
    const req: VectorRequest = {
      method, hook, positive: method === 'caa' ? pos : pos.slice(0, 1), negative: method === 'caa' ? neg : neg.slice(0, 1),
      position: position === 'marker' ? { marker } : position, ...(head !== null && isPerHead(hook) ? { head } : {}),
    };
    const what = method === 'caa' ? `CAA ${set.name}` : `ActAdd “${req.positive[0]}” − “${req.negative[0]}”`;
    void buildVector(req, what, method === 'caa' ? set.suggested?.alpha : undefined).then(onDone);
  };
  const hooks = steerableHooks(info?.hookNames ?? []);
  return (
    <fieldset className="builder" data-testid="vector-builder">
      <legend>Build from contrastive texts</legend>
      <div className="row">
        <label>Set name <input data-testid="set-name" value={set.name} onChange={(e) => setSet({ ...set, name: e.target.value })} /></label>
        <button type="button" className="small" data-testid="reset-set" onClick={() => { setSet(null); void loadDefaultSet(); }}>Reset to {DEFAULT_SET.split('/').pop()}</button>
        {set.suggested && (
          <button type="button" className="small" data-testid="use-suggested" onClick={() => { setPrompt(set.suggested!.prompt); setFuture('good', { mode: 'text', value: set.suggested!.good }); setFuture('bad', { mode: 'text', value: set.suggested!.bad }); }}>
            Use its prompt and futures (“{set.suggested.prompt}” · “{set.suggested.good}” vs “{set.suggested.bad}”)
          </button>
        )}
      </div>
      {set.suggested && (good.mode !== 'text' || bad.mode !== 'text' || good.value !== set.suggested.good || bad.value !== set.suggested.bad) && (
        <p className="note-warn" role="status" data-testid="set-futures-differ">
          This set was written for the futures “{set.suggested.good}” vs “{set.suggested.bad}”, but the experiment measures “{good.value}” vs “{bad.value}”:
          its vector moves a margin the experiment does not read, and a large α can swamp the lens. Use its prompt and futures, or read the result with that in mind.
        </p>
      )}
      <div className="set-texts">
        <label className="stack">Positive texts ({pos.length}), one per line
          <textarea rows={8} data-testid="set-positive" value={set.positive.join('\n')} onChange={(e) => setSet({ ...set, positive: e.target.value.split('\n') })} spellCheck={false} />
        </label>
        <label className="stack">Negative texts ({neg.length}), one per line
          <textarea rows={8} data-testid="set-negative" value={set.negative.join('\n')} onChange={(e) => setSet({ ...set, negative: e.target.value.split('\n') })} spellCheck={false} />
        </label>
      </div>
      <div className="row settings">
        <label>Method
          <select data-testid="vector-method" value={method} onChange={(e) => { const m = e.target.value as VectorRequest['method']; setMethod(m); if (m === 'caa' && position === 'mean') setPosition('last'); if (m === 'actadd' && position === 'marker') setPosition('last'); }}>
            <option value="caa">CAA: mean(positive) − mean(negative)</option>
            <option value="actadd">ActAdd: first positive − first negative</option>
          </select>
        </label>
        <label>Hook
          <select data-testid="vector-hook" value={hook} onChange={(e) => setHook(e.target.value)}>
            {hooks.map((h) => <option key={h} value={h}>{h}</option>)}
          </select>
        </label>
        <label>Token
          <select data-testid="vector-position" value={position} onChange={(e) => setPosition(e.target.value as typeof position)}>
            <option value="last">last token</option>
            {method === 'actadd' && <option value="mean">mean over aligned positions</option>}
            {method === 'caa' && <option value="marker">token after a marker</option>}
          </select>
        </label>
        {position === 'marker' && <label>Marker <input className="short" value={marker} onChange={(e) => setMarker(e.target.value)} /></label>}
        {isPerHead(hook) && info && (
          <label>Head
            <select value={head ?? ''} onChange={(e) => setHead(e.target.value === '' ? null : Number(e.target.value))}>
              <option value="">whole row</option>
              {Array.from({ length: info.nHeads }, (_, h) => <option key={h} value={h}>head {h}</option>)}
            </select>
          </label>
        )}
        <button type="button" className="primary" data-testid="build-vector" title={waitingFor(job)} disabled={!!job || !info || !pos.length || !neg.length} onClick={build}>Build vector</button>
        <button type="button" className="small" onClick={() => setView('margins')}>Back to the heatmap</button>
      </div>
      <p className="hint">CAA: Rimsky et al., arXiv 2312.06681 (difference of means at one token). ActAdd: Turner et al., arXiv 2308.10248 (one prompt pair).</p>
    </fieldset>
  );
}

/** What Apply did, in words: where, with which α, and which intervention of the list it is. */
function appliedNote(a: AppliedVector, v: LibraryEntry): string {
  const n = useStore.getState().interventions.findIndex((d) => d.id === a.id) + 1;
  if (a.refused) return `Intervention #${n} is left switched off: ${a.refused}. Build or import a vector on the model loaded now, or load the model this vector was built on.`;
  return `${a.replaced ? 'Set' : 'Added'} intervention #${n}: add “${v.name}” at ${a.hook} with α = ${a.alpha}, all positions, every step${v.hook ? '' : ' (the file does not say its hook: change it in the editor)'}. Analyse or Generate to see it steered.`;
}

/** One library vector: provenance, its α and Apply (into the steering editor), and export buttons. */
function LibraryRow({ v, i, busy, onApplied }: { v: LibraryEntry; i: number; busy: boolean; onApplied: (note: string) => void }) {
  const waiting = useWaitingFor();
  const model = useStore((s) => s.info?.label ?? null);
  const removeVector = useStore((s) => s.removeVector);
  const setAlpha = useStore((s) => s.setVectorAlpha);
  const apply = () => { const a = applyVector(v.id); if (a) onApplied(appliedNote(a, v)); };
  const p = v.provenance;
  const pairs = p.positive.length || p.negative.length ? `${p.positive.length} / ${p.negative.length}` : '—';
  return (
    <tr data-testid={`library-row-${i}`} data-d={v.dModel} data-hook={v.hook ?? ''}>
      <th scope="row" className="lib-name">
        {v.name}{v.file ? <span className="muted"> (file)</span> : null}
        <span className="lib-apply" title="Steer with it: an add intervention at its hook with this α, all positions, every step, opened in the editor (a heatmap cell at its hook places it with this α too)">
          α <NumberInput value={v.alpha ?? 1} label={`α of ${v.name}`} testId={`vector-alpha-${i}`} onChange={(a) => a !== null && setAlpha(v.id, a)} />
          <button type="button" className="small" data-testid={`apply-vector-${i}`} onClick={apply}>Apply</button>
        </span>
      </th>
      <td>{p.method}{p.position !== 'unknown' ? ` · ${p.position}` : ''}</td>
      <td className="mono">{v.hook ?? '—'}</td>
      <td className={v.model && model && v.model !== model ? 'warn' : undefined} title={v.model && model && v.model !== model ? `computed on ${v.model}; the loaded model is ${model}` : undefined}>{v.model ?? '—'}</td>
      <td className="num" data-testid={`library-d-${i}`}>{v.dModel}</td>
      <td className="num">{pairs}</td>
      <td>{new Date(v.createdAt).toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'short' })}</td>
      <td>
        <span className="lib-buttons">
          {FORMATS.map((f) => <button key={f} type="button" className="small" data-testid={`export-${f}-${i}`} title={waiting} disabled={busy} onClick={() => void exportVector(v, f)}>.{f}</button>)}
          <button type="button" className="small" aria-label={`delete ${v.name}`} onClick={() => removeVector(v.id)}>×</button>
        </span>
      </td>
    </tr>
  );
}

/** The vector library: build (CAA / ActAdd) or import (.npy, .safetensors, .json) vectors, see their provenance, export them. */
export function VectorLibraryView() {
  const vectors = useStore((s) => s.vectors);
  const busy = useStore((s) => s.job !== null);
  const waiting = useWaitingFor();
  const ready = useStore((s) => s.modelStatus === 'ready');
  const fileInput = useRef<HTMLInputElement | null>(null);
  const [duplicate, setDuplicate] = useState<string | null>(null);
  const [applied, setApplied] = useState<string | null>(null);
  const done = (r: LibraryAddition | null) => setDuplicate(duplicateNote(r, useStore.getState().vectors));
  return (
    <section className="view" data-testid="vectors-view">
      <header className="view-head">
        <h2>Steering vectors</h2>
        <p className="muted">Vectors for the interventions and the dose–response sweep, with where each came from. Built vectors are read from the loaded model; imported files are checked against it.</p>
      </header>
      <Builder onDone={done} />
      <fieldset className="builder">
        <legend>Import a file</legend>
        <div className="row">
          <button type="button" title={waiting} disabled={busy || !ready} onClick={() => fileInput.current?.click()}>Import .npy / .safetensors / .json…</button>
          <input
            ref={fileInput} className="visually-hidden" type="file" accept=".npy,.safetensors,.json" data-testid="vector-file" aria-label="vector file"
            onChange={(e) => {
              const f = e.currentTarget.files?.[0];
              if (f) void importVectorFile(f).then(done);
              e.currentTarget.value = '';
            }}
          />
          <span className="hint">One vector of shape (d,) or (1, d); float32/float64 .npy, F32/F16/BF16 .safetensors, or JSON {'{"vector": [...]}'}.</span>
        </div>
      </fieldset>
      <div className="table-scroll">
        <table className="data-table library" data-testid="vector-library">
          <caption>Library ({vectors.length}){duplicate && <span className="hint" role="status" data-testid="library-duplicate"> {duplicate}</span>}{applied && <span className="hint" role="status" data-testid="library-applied"> {applied}</span>}</caption>
          <thead>
            <tr><th scope="col">name</th><th scope="col">method</th><th scope="col">hook</th><th scope="col">model</th><th scope="col">d</th><th scope="col">pairs (+/−)</th><th scope="col">created</th><th scope="col">export</th></tr>
          </thead>
          <tbody>
            {vectors.length
              ? vectors.map((v, i) => <LibraryRow key={v.id} v={v} i={i} busy={busy} onApplied={setApplied} />)
              : <tr><td colSpan={8} className="muted">No vectors yet: build one above or import a file.</td></tr>}
          </tbody>
        </table>
      </div>
    </section>
  );
}
