import { useState } from 'react';
import { useStore } from '../store';
import { runStudy } from '../actions/study';
import { useStudy } from '../components/useStudy';
import { Heatmap } from '../components/Heatmap';
import { ColorLegend } from '../components/ColorLegend';
import { ScaleControl, useHeatmapColour } from '../components/ScaleControl';
import { useExperimentRequest } from '../components/useExperimentRequest';
import { download } from '../lib/export';
import { visibleToken } from '../lib/format';
import { waitingFor } from '../lib/job_rules';
import { writeNpyArray } from '../../workers/shared';
import type { StudyRequest, StudyResult } from '../../workers/protocol';

type Run = StudyResult<'generationActivations'>['unsteered'];

/** One run's [steps, width] capture as a heatmap, with its .npy. */
function StepGrid({ run, hook, width, which, model }: { run: Run; hook: string; width: number; which: 'unsteered' | 'steered'; model: string }) {
  const scale = useHeatmapColour(run.data, 'value');
  const steps = run.ids.length;
  const rowLabels = run.positions.map((p, s) => `${s} · pos ${p}`);
  const colLabels = Array.from({ length: width }, (_, i) => String(i));
  return (
    <div className="figure" data-testid={`gen-capture-${which}`} data-steps={steps} data-width={width}>
      <p className="muted">{which === 'steered' ? 'With the interventions' : 'Without the interventions'}: [{steps} steps, {width} values] float32 · text: <span className="mono">{run.tokens.map(visibleToken).join('')}</span></p>
      <span className="export">
        <button type="button" className="small" data-testid={`gen-capture-npy-${which}`} onClick={() => download(`${hook}-steps-${which}-${model}.npy`, new Blob([writeNpyArray(run.data, [steps, width]) as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }))}>.npy [steps, width]</button>
      </span>
      <Heatmap values={run.data} nRows={steps} nCols={width} color={scale.color} rowLabels={rowLabels} colLabels={colLabels}
        rowTitle="step" colTitle="index" cellWidth={{ min: 3, max: 24 }} cellHeight={16} label={`${hook} at every generation step, ${which}`} testId={`gen-capture-heatmap-${which}`} />
      <ColorLegend color={scale.color} domain={scale.domain} title={`${hook} · colour ${scale.note}`} testId={`gen-capture-legend-${which}`} />
    </div>
  );
}

/**
 * Activations while generating (TransformerLens #697): the Activations view's hook captured at every
 * generation step (greedy, from the KV-cached decode), without and with the enabled interventions,
 * shown as step × index (row s: the position step s adds last, T − 1 + s) and saved as .npy [steps, width].
 */
export function GenerationCapturePanel({ hook }: { hook: string }) {
  const job = useStore((s) => s.job);
  const [maxNew, setMaxNew] = useState(16);
  const { run, running } = useStudy('generationActivations');
  const { request, problem } = useExperimentRequest();
  const req: StudyRequest<'generationActivations'> | undefined = request && { ...request, hook, maxNewTokens: maxNew };
  const r = run?.result;
  return (
    <section className="subview" data-testid="gen-capture">
      <header className="view-head">
        <h3>While generating{r ? ` · ${r.hook}` : ''}</h3>
        <p className="muted">Captures the hook above at every step of a greedy generation of the prompt (the positions each step adds: row s is position T − 1 + s), without the interventions and, when any are enabled, with them.</p>
        <div className="row settings">
          <label>New tokens <input type="number" className="short" min={1} max={256} data-testid="gen-capture-max-new" value={maxNew} onChange={(e) => { const n = Number(e.target.value); if (Number.isInteger(n) && n >= 1 && n <= 256) setMaxNew(n); }} /></label>
          <button type="button" data-testid="gen-capture-run" title={waitingFor(job)} disabled={!!job || !req?.prompt.trim()} onClick={() => { if (req) void runStudy('generationActivations', req, { label: `Capturing ${hook} while generating`, what: `Could not capture ${hook} while generating`, total: req.specs?.length ? 2 : 1 }); }}>Capture while generating</button>
          <ScaleControl what="value" testId="gen-capture-scale" />
        </div>
        {problem && <p className="warn" data-testid="gen-capture-problem">{problem}</p>}
      </header>
      {r && !running && (
        <div className="view-body">
          <StepGrid run={r.unsteered} hook={r.hook} width={r.width} which="unsteered" model={run.modelLabel} />
          {r.steered && <StepGrid run={r.steered} hook={r.hook} width={r.width} which="steered" model={run.modelLabel} />}
        </div>
      )}
    </section>
  );
}
