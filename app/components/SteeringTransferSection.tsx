import { useState } from 'react';
import { useStore } from '../store';
import { useStudy } from './useStudy';
import { LabelledSetSource } from './LabelledSetSource';
import { ExportButtons } from './ExportButtons';
import { ResultStatus } from './ResultStatus';
import { probeSet } from '../actions/probe';
import { runStudy } from '../actions/study';
import { futureInput } from '../lib/futures';
import { chatTurnOf } from '../lib/experiment_request';
import { useChatTurn } from './useExperimentRequest';
import { fixed, signed } from '../lib/format';
import { blockName, blockShort } from '../lib/layer_names';
import { waitingFor } from '../lib/job_rules';
import type { StudyRequest, TransferResult } from '../../workers/protocol';

/** The request of the steering transfer for the experiment's prompt, chat turn and futures and the Probes view's set; null when a future does not parse or the set lacks a class. */
function transferRequest(alpha: number): StudyRequest<'steeringTransfer'> | null {
  const s = useStore.getState();
  try {
    const set = probeSet();
    if (!set.positive.length || !set.negative.length) return null;
    return { prompt: s.prompt, ...chatTurnOf(s), good: futureInput(s.good), bad: futureInput(s.bad), positive: set.positive, negative: set.negative, alpha };
  } catch {
    return null;
  }
}

/** cos(v_A, v_B) as text: "1 (exact)" where the two vectors are equal, else 5 decimals. */
const cosText = (v: number) => (v === 1 ? '1 (exact)' : Number.isFinite(v) ? fixed(v, 5) : '— (zero vector)');

/** The rows of the table and of the CSV, one per block. */
function rowsOf(t: TransferResult): (string | number)[][] {
  return t.layers.map((l, i) => [blockShort(l), t.cosine[i], t.normRatio[i], t.steered.aByA[i], t.steered.bByA[i], t.steered.bByB[i], t.steered.aByB[i]]);
}

/**
 * Steering transfer in the Compare view (the `steeringTransfer` study; DESIGN.md §3 "Model
 * comparison": does a vector found in the base still steer the fine-tune?): CAA vectors of the
 * Probes view's labelled set (positive − negative, last token, blocks.l.hook_resid_post) built on A
 * and on B per block, their cosine and norm ratio, and each vector added at α to both models on the
 * experiment's prompt, with the final margin Δ of each run.
 */
export function SteeringTransferSection() {
  const modelB = useStore((s) => s.modelB);
  const info = useStore((s) => s.info);
  const job = useStore((s) => s.job);
  const probe = useStore((s) => s.probeSettings);
  useStore((s) => s.prompt); useStore((s) => s.good); useStore((s) => s.bad); useChatTurn();
  const [alpha, setAlpha] = useState(4);
  // Build waits for both classes of the set: said beside it (a trial pressed a dead button with the default example only picked, not loaded).
  const set = probe.positive.trim() !== '' && probe.negative.trim() !== '';
  const req = transferRequest(alpha);
  const { run, stale, running } = useStudy('steeringTransfer', req ?? undefined);
  const t = run?.result ?? null;
  const ready = !!info && modelB?.status === 'ready' && !!req && Number.isFinite(alpha);
  const start = () => { if (req) void runStudy('steeringTransfer', req, { label: 'Steering transfer: CAA on A and B', what: 'Could not build the steering transfer', total: 6 * (info?.nLayers ?? 1) + 2 }); };
  const header = ['block', 'cos(v_A, v_B)', '‖v_B‖/‖v_A‖', 'Δ A + α·v_A', 'Δ B + α·v_A (transferred)', 'Δ B + α·v_B', 'Δ A + α·v_B (transferred)'];
  return (
    <section className="compare-section" aria-label="steering transfer" data-testid="transfer">
      <h3>Steering transfer</h3>
      <p className="muted">
        Does a vector found in one model still steer the other? CAA vectors (mean activation of the set’s “{probe.classes[1]}” prompts − mean of its “{probe.classes[0]}” prompts at the last token,
        blocks.l.hook_resid_post) built on A and on B at every block, their cosine, and each added at α to both models on the experiment’s prompt (all positions).
      </p>
      <div className="settings row">
        <LabelledSetSource prefix="transfer-set" />
        <label>α <input type="number" className="short" step="1" value={alpha} data-testid="transfer-alpha" onChange={(e) => setAlpha(Number(e.target.value))} aria-invalid={!Number.isFinite(alpha)} /></label>
        <button type="button" data-testid="run-transfer" disabled={!!job || !ready} onClick={start}
          title={waitingFor(job) ?? (!modelB ? 'Load model B first' : !req ? 'The set needs prompts in both classes, and the futures must parse' : undefined)}>Build CAA on A and B</button>
      </div>
      {!set && <p className="hint" role="status" data-testid="transfer-needs-set">No labelled set is loaded yet: pick one under Example and press Load (he/she is offered first), or open a set file. The vectors are built from its prompts.</p>}
      {running && <p className="muted">Building the vectors on A and B…</p>}
      {t && (
        <>
          <div className="view-head">
            <p className="muted" data-testid="transfer-caption">
              α = {t.alpha} · unsteered Δ_A = {signed(t.marginA, 4)}, Δ_B = {signed(t.marginB, 4)} · vectors equal in both models (cos = 1 exactly): {t.layers.filter((_, i) => t.cosine[i] === 1).map(blockShort).join(', ') || 'at no block'}
            </p>
            <ExportButtons name={`transfer-${t.labelA}-${t.labelB}`} json={() => ({ label_a: t.labelA, label_b: t.labelB, hook: t.hookTemplate, alpha: t.alpha, margin_a: t.marginA, margin_b: t.marginB, rows: rowsOf(t).map((r) => Object.fromEntries(header.map((h, j) => [h, r[j]]))) })} csv={() => [header, ...rowsOf(t)]} />
          </div>
          <ResultStatus model={run!.modelLabel} computedWith={run!.computedWith} stale={stale === 'request' ? ['prompt'] : []} noun="transfer" rerun={{ label: 'Build CAA on A and B', run: start }} testId="transfer-status" />
          <table className="data" data-testid="transfer-table">
            <thead><tr>{header.map((h) => <th key={h}>{h}</th>)}</tr></thead>
            <tbody>
              {t.layers.map((l, i) => (
                <tr key={l}>
                  <th scope="row" title={blockName(l, 'hook_resid_post')}>{blockShort(l)}</th>
                  <td className="mono" data-testid={`transfer-cos-${l}`}>{cosText(t.cosine[i])}</td>
                  <td className="mono">{fixed(t.normRatio[i], 4)}</td>
                  {[t.steered.aByA, t.steered.bByA, t.steered.bByB, t.steered.aByB].map((x, j) => <td key={j} className="mono">{signed(x[i], 3)}</td>)}
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
