import { useEffect, useRef, useState } from 'react';
import { useStore } from '../store';
import { directoryFiles, loadHubModel, loadModel, localModelSource, openModelFolder } from '../actions/model';
import { CATALOG, CPU_BACKEND } from '../../workers/shared';
import type { BackendChoice, CatalogEntry } from '../../workers/protocol';
import { ModelCatalog } from './ModelCatalog';
import { CacheManager } from './CacheManager';
import { CachedModelOffer } from './CachedModelOffer';
import { WeightStorageChoice } from './WeightStorage';
import { SizeLadderCheck } from './SizeLadder';
import { loadBlocked, loadCancels, waitingFor } from '../lib/job_rules';
import { loadModelB } from '../actions/model_b';
import type { ModelSource } from '../../workers/protocol';

type DirectoryPicker = () => Promise<FileSystemDirectoryHandle>;

/** The dropdown's value while it names a loaded model that is not a bundled one (no bundled folder is named so: its name has a NUL). */
const LOADED = '\u0000loaded';

/**
 * Where the model comes from: a folder the server offers (first), a folder on this computer
 * (folder input, or the File System Access API where the browser has it), or a Hugging Face Hub
 * repo — typed, or chosen from the curated list — with the browser's model cache below it. The
 * access token stays in this component's memory: never stored, never put in the URL or an export.
 *
 * `slot` 'B' is the same picker for model B (the Compare view): it loads with actions/model_b.ts
 * beside model A, its test ids prefixed "b-", without the backend, weight-storage and cache
 * controls (model B uses the model bar's backend and weight storage).
 */
export function ModelPicker({ slot = 'A' }: { slot?: 'A' | 'B' } = {}) {
  const isB = slot === 'B';
  const tid = (id: string) => (isB ? `b-${id}` : id);
  const load = (source: ModelSource) => (isB ? loadModelB(source) : loadModel(source));
  const localModels = useStore((s) => s.localModels);
  const job = useStore((s) => s.job);
  // A load cancels a running generation (sweep, tree…) rather than waiting for it (lib/job_rules.ts).
  const busy = loadBlocked(job);
  const cancels = loadCancels(job);
  // Why Load is disabled or what it does now: a load never races another (it waits for it: Cancel stops it).
  const loadTitle = cancels ? `Loading cancels “${job!.label}”` : busy ? `${waitingFor(job)}: one model load at a time` : undefined;
  const backendChoice = useStore((s) => s.backendChoice);
  const setBackendChoice = useStore((s) => s.setBackendChoice);
  const [local, setLocal] = useState('');
  const [repo, setRepo] = useState('');
  const [revision, setRevision] = useState('main');
  /** Whether the token field holds something (the token itself is read from the field on load: an uncontrolled input, so React never writes it into a value attribute of the DOM). */
  const [hasToken, setHasToken] = useState(false);
  const [endpoint, setEndpoint] = useState('');
  /** A gated curated model chosen without a token: the token field asks for one. */
  const [needsToken, setNeedsToken] = useState<CatalogEntry | null>(null);
  const folderInput = useRef<HTMLInputElement>(null);
  const tokenInput = useRef<HTMLInputElement>(null);
  const picker = (window as unknown as { showDirectoryPicker?: DirectoryPicker }).showDirectoryPicker;

  useEffect(() => {
    folderInput.current?.setAttribute('webkitdirectory', '');
  }, []);
  const loadedBundled = useStore((s) => {
    const src = isB ? s.modelB?.source : s.lastLoad?.source;
    return src?.kind === 'url' ? src.label ?? null : null;
  });
  // A model from elsewhere (a folder, files, the Hub): the dropdown names it (a trial saw "stories260K" after a folder load).
  const loadedOther = useStore((s) => {
    const src = isB ? s.modelB?.source : s.lastLoad?.source;
    return !src || src.kind === 'url' ? null : src.kind === 'hub' ? `${src.repo} (Hub)` : src.label;
  });
  // the folder or Hub model loaded: "Will it fit?" sizes it (not the bundled one the dropdown showed before)
  const lastSource = useStore((s) => s.lastLoad?.source);
  const preferred = isB ? 'stories260K-happy-ft' : 'stories260K';
  useEffect(() => {
    if (!local && localModels.length) setLocal(localModels.includes(preferred) ? preferred : localModels[0]);
  }, [local, localModels, preferred]);
  // The dropdown shows the bundled model that is loaded (also one a link or the last experiment restored).
  useEffect(() => {
    if (loadedBundled && localModels.includes(loadedBundled)) setLocal(loadedBundled);
  }, [loadedBundled, localModels]);
  useEffect(() => {
    if (loadedOther) setLocal(LOADED);
    else setLocal((v) => (v === LOADED ? '' : v));
  }, [loadedOther]);

  const openFolder = async () => {
    if (!picker) {
      folderInput.current?.click();
      return;
    }
    let dir: FileSystemDirectoryHandle;
    try {
      dir = await picker();
    } catch {
      return; // the user closed the dialog
    }
    await openModelFolder(await directoryFiles(dir), load);
  };

  const loadHub = (id: string, rev: string) => {
    setNeedsToken(null);
    const token = tokenInput.current?.value ?? '';
    const source = { kind: 'hub' as const, repo: id, revision: rev.trim() || 'main', endpoint: endpoint.trim() || undefined, token: token || undefined };
    void (isB ? loadModelB(source) : loadHubModel(source));
  };

  /** A curated model fills the form (revision main) and loads, unless it is gated and no token is given yet. */
  const choose = (entry: CatalogEntry) => {
    setRepo(entry.repo);
    setRevision('main');
    if (entry.gated && !hasToken) {
      setNeedsToken(entry);
      tokenInput.current?.focus();
      return;
    }
    loadHub(entry.repo, 'main');
  };

  return (
    <section className={`model-picker${isB ? ' model-picker-b' : ''}`} aria-label={isB ? 'model B' : 'model'}>
      <div className="row">
        <label>
          {isB ? 'Model B' : 'Model'}
          <select data-testid={tid('model-select')} value={local} onChange={(e) => setLocal(e.target.value)} disabled={!localModels.length && !loadedOther}>
            {loadedOther && <option value={LOADED}>{loadedOther}</option>}
            {localModels.map((m) => <option key={m} value={m}>{m}</option>)}
          </select>
        </label>
        <button type="button" data-testid={tid('load-local')} disabled={busy || !local || local === LOADED} title={loadTitle ?? (local === LOADED ? 'Loaded already: choose a bundled model to load it instead' : undefined)} onClick={() => void load(localModelSource(local))}>{isB ? 'Load as B' : 'Load'}</button>
        <button type="button" data-testid={tid('open-folder')} disabled={busy} onClick={() => void openFolder()} title={loadTitle ?? 'A folder with config.json, tokenizer.json and model.safetensors'}>
          Open folder…
        </button>
        <input
          ref={folderInput}
          className="visually-hidden"
          type="file"
          multiple
          data-testid={tid('folder-input')}
          aria-label={isB ? 'model B folder' : 'model folder'}
          onChange={(e) => {
            const list = e.currentTarget.files;
            if (list && list.length) void openModelFolder(Array.from(list, (file) => ({ path: file.webkitRelativePath || file.name, file })), load);
            e.currentTarget.value = '';
          }}
        />
        {!isB && <label>
          Backend
          <select data-testid="backend-choice" value={backendChoice} onChange={(e) => setBackendChoice(e.target.value as BackendChoice)}>
            <option value="auto">auto (WebGPU, else the {CPU_BACKEND})</option>
            <option value="webgpu">WebGPU only</option>
            <option value="cpu">{CPU_BACKEND}</option>
          </select>
        </label>}
        {!isB && <WeightStorageChoice />}
      </div>
      {!isB && <SizeLadderCheck source={local === LOADED ? lastSource ?? null : local ? localModelSource(local) : null} />}
      {!isB && <CachedModelOffer />}
      <details className="hub">
        <summary>Hugging Face Hub <span className="muted">— curated models, any repo, and this browser's model cache</span></summary>
        <ModelCatalog entries={CATALOG} disabled={busy} onChoose={choose} />
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            loadHub(repo.trim(), revision);
          }}
        >
          <label>Repo <input data-testid={tid('hub-repo')} className="repo-id" value={repo} onChange={(e) => { setRepo(e.target.value); setNeedsToken(null); }} placeholder="owner/name" spellCheck={false} /></label>
          <label>Revision <input data-testid={tid('hub-revision')} className="short" value={revision} onChange={(e) => setRevision(e.target.value)} spellCheck={false} /></label>
          <label title="Only for gated or private repos; kept in memory, never saved">
            Token <input ref={tokenInput} data-testid={tid('hub-token')} className="hub-token" type="password" autoComplete="off" defaultValue="" onChange={(e) => setHasToken(e.target.value !== '')} placeholder="hf_… (optional)" />
          </label>
          <label title="A mirror with the Hub's {repo}/resolve/{revision}/{file} layout (like HF_ENDPOINT); empty = huggingface.co">
            Endpoint <input data-testid={tid('hub-endpoint')} value={endpoint} onChange={(e) => setEndpoint(e.target.value)} placeholder="https://huggingface.co" spellCheck={false} />
          </label>
          <button type="submit" data-testid={tid('load-hub')} title={loadTitle} disabled={busy || !/^[\w.-]+\/[\w.-]+$/.test(repo.trim())}>Load from Hub</button>
        </form>
        {hasToken && /^\s*http:\/\//i.test(endpoint) && (
          <p className="hint insecure-endpoint" data-testid="insecure-endpoint" role="alert">
            The endpoint is plain http: the access token would cross the network unencrypted. Use an https mirror, or clear the token.
          </p>
        )}
        {needsToken && (
          <p className="hint token-needed" data-testid="token-needed" role="status">
            {needsToken.label} is gated: accept its licence on <a href={`https://huggingface.co/${needsToken.repo}`} target="_blank" rel="noreferrer">its Hub page</a>,
            paste an access token above (kept in memory only), then Load from Hub.
          </p>
        )}
        {!isB && <CacheManager />}
      </details>
    </section>
  );
}
