import { useEffect, useRef, useState } from 'react';
import { useStore } from './store';
import type { ViewName } from './store/ui';
import { followExperiment, startUp } from './actions/experiment';
import { ExperimentBar } from './components/ExperimentBar';
import { enterPosterFullscreen, PosterMode } from './components/PosterMode';
import { ModelPicker } from './components/ModelPicker';
import { BackendBadge } from './components/BackendBadge';
import { ModelBBadge } from './components/ModelBBadge';
import { ThemeToggle } from './components/ThemeToggle';
import { Progress } from './components/Progress';
import { AnalyseButton } from './components/AnalyseButton';
import { ErrorBanner } from './components/ErrorBanner';
import { PromptEditor } from './components/PromptEditor';
import { FuturesEditor } from './components/FuturesEditor';
import { PromptTokens } from './components/PromptTokens';
import { VIEWS } from './views/registry';
import { SteeringPanel } from './components/SteeringPanel';
import { DeviceLostBanner } from './components/DeviceLostBanner';
import { ViewInterventionsLine } from './components/ViewInterventionsLine';
import { droppedFiles, openDrop } from './actions/drop';
import { useSideColumn } from './components/useSideColumn';

/** The view's component (views/registry.ts). */
function ActiveView({ view }: { view: ViewName }) {
  const View = VIEWS.find((v) => v.name === view)!.component;
  return <View />;
}

/** The workbench: model bar, experiment panel (prompt, futures, tokens) and the views in tabs. */
export function App() {
  const view = useStore((s) => s.view);
  const setView = useStore((s) => s.setView);
  const setFocusPosition = useStore((s) => s.setFocusPosition);
  const showTables = useStore((s) => s.showTables);
  const info = useStore((s) => s.info);
  const setShowTables = useStore((s) => s.setShowTables);
  // Only what App draws itself: a job starting or ending, a streamed token or a hover re-renders
  // the components that read them, not the whole workbench (issue 11, a UI that never stalls).
  const noModel = useStore((s) => s.modelStatus !== 'ready' && s.job === null);

  const [poster, setPoster] = useState<'off' | 'on' | 'kiosk'>(() => (new URLSearchParams(location.search).has('poster') ? 'kiosk' : 'off'));
  const [dragging, setDragging] = useState(false);
  const started = useRef(false);
  const side = useRef<HTMLDivElement | null>(null);
  useSideColumn(side, poster === 'off');
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    // A kiosk (?poster) starts on the deck, which poster mode restores; else the link, the last experiment or the default.
    if (poster !== 'kiosk') void startUp();
    followExperiment();
  }, []);

  // A loaded model without the selected view's tab (Expert routes after loading a dense model) opens the first view, the default.
  useEffect(() => {
    const v = VIEWS.find((x) => x.name === view);
    if (info && v && 'shownFor' in v && !v.shownFor(info)) setView(VIEWS[0].name);
  }, [info]);

  if (poster !== 'off') return <PosterMode kiosk={poster === 'kiosk'} onExit={() => setPoster('off')}><ErrorBanner /><ActiveView view={view} /></PosterMode>;

  return (
    <div
      className={dragging ? 'app dropping' : 'app'} data-testid="workbench"
      // Files dropped anywhere go where they belong (actions/drop.ts), with the pickers' checks and messages.
      onDragOver={(e) => { if (e.dataTransfer.types.includes('Files')) { e.preventDefault(); setDragging(true); } }}
      onDragLeave={(e) => { if (e.currentTarget === e.target) setDragging(false); }}
      onDrop={(e) => { e.preventDefault(); setDragging(false); void droppedFiles(e.dataTransfer).then(openDrop); }}
    >
      <header className="top">
        <h1>Branchpoint <span className="tagline">where does the decision form?</span></h1>
        <div className="row"><BackendBadge /><ModelBBadge /><ThemeToggle /></div>
      </header>
      <ModelPicker />
      <ExperimentBar onPoster={() => { enterPosterFullscreen(); setPoster('on'); }} />
      <div className="status-stack">
        <DeviceLostBanner />
        <ErrorBanner />
      </div>
      <main>
        {/* the experiment beside the views, the running job's line at its foot (useSideColumn) */}
        <div className="side-column" ref={side}>
          <section className="experiment" aria-label="experiment">
            <PromptEditor />
            <FuturesEditor />
            <div className="row">
              <AnalyseButton />
              {noModel && <span className="muted">Load a model first.</span>}
            </div>
            <PromptTokens />
            <SteeringPanel />
          </section>
          <div className="progress-dock"><Progress /></div>
        </div>
        <section className="views">
          <nav className="tabs" role="tablist">
            {VIEWS.filter((v) => !('shownFor' in v) || v.shownFor(info) || view === v.name).map((v) => (
              <button key={v.name} type="button" role="tab" aria-selected={view === v.name} data-testid={`tab-${v.name}`} className={view === v.name ? 'active' : ''} onClick={() => { setView(v.name); setFocusPosition(null); }}>
                {v.title}
              </button>
            ))}
            <label className="toggle tables-toggle">
              <input type="checkbox" data-testid="show-tables" checked={showTables} onChange={(e) => setShowTables(e.target.checked)} />
              Data tables
            </label>
          </nav>
          <ViewInterventionsLine view={view} />
          <ActiveView view={view} />
        </section>
      </main>
    </div>
  );
}
