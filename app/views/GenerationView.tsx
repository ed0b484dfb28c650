import { memo, useRef } from 'react';
import { useStore } from '../store';
import { generate } from '../actions/generate';
import { tokenLabels } from '../lib/token_labels';
import { cancelRunning } from '../actions/job';
import { LineChart, type Series } from '../components/LineChart';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus } from '../components/ResultStatus';
import { useChatTurn } from '../components/useExperimentRequest';
import { sameTurn } from '../lib/stale';
import { fixed, signed, quotedToken, visibleToken } from '../lib/format';
import type { GenerationSettings } from '../store/experiment';
import type { GenerationRun } from '../store/results';
import type { TokenEvent } from '../../workers/protocol';
import { firstDivergence } from '../lib/divergence';
import { doseText, drawnUnderSteering } from '../lib/steered';
import { waitingFor } from '../lib/job_rules';

function NumberField({ label, field, min, max, step, testId }: { label: string; field: keyof GenerationSettings; min: number; max: number; step: number; testId: string }) {
  const value = useStore((s) => s.generation[field]);
  const set = useStore((s) => s.setGeneration);
  return (
    <label>
      {label}
      <input
        type="number" className="short" data-testid={testId} min={min} max={max} step={step} value={value}
        onChange={(e) => {
          const v = Number(e.target.value);
          if (Number.isFinite(v)) set({ [field]: Math.min(max, Math.max(min, v)) });
        }}
      />
    </label>
  );
}

const STOP: Record<string, string> = {
  length: 'reached the token limit',
  eos: 'the model emitted an end-of-sequence token',
  context: 'the context is full',
  cancelled: 'cancelled',
};

const UNSTEERED = '#0969da';
const STEERED = '#d9480f';

/** What the plain run's elements show before the first generation (hidden then). */
const NO_RUN: GenerationRun = { events: [], final: null };

/** The text of a run so far (the decoded text once it has finished). */
function runText(run: GenerationRun): string {
  return run.final ? run.final.text : run.events.map((e) => e.token).join('');
}

/** The continuation after the prompt, with the token at the first divergence from the other run marked. */
function Continuation({ run, prompt, diverge, testId, live }: { run: GenerationRun; prompt: string; diverge: number | null; testId: string; live: boolean }) {
  const text = runText(run);
  const toks = run.events.map((e) => e.token);
  const split = diverge !== null && diverge < toks.length && toks.join('') === text;
  return (
    <div className="generated" data-testid={`generation-output${testId}`} data-done={run.final ? 'true' : 'false'}>
      <span className="prompt-text">{prompt}</span>
      <span className="new-text" data-testid={`generated-text${testId}`}>
        {split ? (
          <>
            {toks.slice(0, diverge).join('')}
            <mark className="diverge" data-testid={`divergence-mark${testId}`} title={`first divergence: step ${diverge}`}>{toks[diverge]}</mark>
            {toks.slice(diverge + 1).join('')}
          </>
        ) : text}
      </span>
      {live && <span className="caret" aria-hidden="true">▍</span>}
    </div>
  );
}

/**
 * One generated token. Memoised on primitive props (the event objects stay the same as the run
 * grows): a streamed frame renders only the tokens it added, not the whole strip again.
 */
const TokenItem = memo(function TokenItem({ e, label, isByte, steeredBy, diverge, testId }: { e: TokenEvent; label: string; isByte: boolean; steeredBy: string; diverge: boolean; testId: string }) {
  const cls = [e.margin >= 0 ? 'pos' : 'neg', steeredBy ? 'steered' : '', diverge ? 'diverge' : ''].filter(Boolean).join(' ');
  return (
    <li data-testid={`generated-token${testId}`} data-id={e.id} data-step={e.step} data-steered={steeredBy || undefined} className={cls}
      title={`step ${e.step} · id ${e.id} · log p ${fixed(e.logProb, 3)} · Δ ${signed(e.margin, 4)}${steeredBy ? ` · drawn from a pass steered by ${steeredBy.split(' ').map((n) => `#${n}`).join(', ')}` : ''}${diverge ? ' · first divergence' : ''}`}>
      <span className="idx">{e.step}</span>
      <span className={isByte ? 'txt byte' : 'txt'} data-byte={isByte || undefined}>{isByte ? label : visibleToken(label)}</span>
    </li>
  );
});

/** The new tokens of a run: margin sign underlined, steered passes and the first divergence marked. */
function TokenRow({ run, steeredBy, diverge, testId }: { run: GenerationRun; steeredBy: (step: number) => number[]; diverge: number | null; testId: string }) {
  const byteTokens = useStore((s) => s.info?.byteTokens);
  const { labels, isByte } = tokenLabels(run.events.map((e) => e.token), run.events.map((e) => e.id), byteTokens);
  return (
    <ol className="token-strip generated-tokens" aria-label="generated tokens">
      {run.events.map((e, i) => (
        <TokenItem key={e.step} e={e} label={labels[i]} isByte={isByte[i]} steeredBy={steeredBy(e.step).join(' ')} diverge={e.step === diverge} testId={testId} />
      ))}
    </ol>
  );
}

/** How a run ended, or how far it is. */
function StopLine({ run, max, testId }: { run: GenerationRun; max: number; testId: string }) {
  return (
    <p className="muted" data-testid={`generation-stop${testId}`}>
      {run.final ? `${run.final.ids.length} tokens · stopped: ${STOP[run.final.stop]}` : `${run.events.length} of ${max} tokens…`}
    </p>
  );
}

/**
 * Generation: settings, the text as it streams, each token's margin, and the margin curve Δ per
 * step (DESIGN.md §3 "Margin curve during generation"). Under interventions, the steered and the
 * unsteered generation from the same seed side by side, their first divergence marked, and both
 * margin curves on one plot.
 */
export function GenerationView() {
  const gen = useStore((s) => s.gen);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const contextLength = useStore((s) => s.info?.contextLength ?? 4096);
  const good = useStore((s) => s.good.value);
  const bad = useStore((s) => s.bad.value);
  const prompt = useStore((s) => s.prompt);
  const turn = useChatTurn();
  const maxNewTokens = useStore((s) => s.generation.maxNewTokens);
  const svg = useRef<SVGSVGElement | null>(null);
  const generating = job?.kind === 'generate';
  const steered = gen?.steered ?? null;
  const nPrompt = gen?.final?.promptIds.length ?? steered?.final?.promptIds.length ?? null;
  const steeredBy = (step: number) => (gen && nPrompt !== null ? gen.steering.filter((a) => drawnUnderSteering(a.draft, nPrompt, step)).map((a) => a.n) : []);
  const diverge = gen && steered ? firstDivergence(gen.events.map((e) => e.id), steered.events.map((e) => e.id)) : null;
  const bothDone = Boolean(gen?.final && (!steered || steered.final));
  const series: Series[] = gen ? (steered
    ? [
      { name: 'unsteered Δ', color: UNSTEERED, dashed: true, points: gen.events.map((e) => [e.step, e.margin] as [number, number]) },
      { name: 'steered Δ', color: STEERED, points: steered.events.map((e) => [e.step, e.margin] as [number, number]) },
    ]
    : [{ name: 'Δ', color: UNSTEERED, points: gen.events.map((e) => [e.step, e.margin] as [number, number]) }]) : [];
  const steeringText = gen?.steering.map(({ n, draft }) => `#${n} ${draft.type} ${doseText(draft)} at ${draft.hook}`).join('; ') ?? '';
  return (
    <section className="view" data-testid="generation-view">
      <header className="view-head">
        <h2>Generation</h2>
        <p className="muted">Temperature 0 is greedy decoding. The curve shows, at each step, Δ = log p(good) − log p(bad) in the distribution the token was drawn from. With interventions on, the same seed is generated with and without them.</p>
      </header>
      <form className="row settings" onSubmit={(e) => { e.preventDefault(); if (!job && ready) void generate(); }}>
        <NumberField label="Max new tokens" field="maxNewTokens" min={1} max={contextLength} step={1} testId="max-new-tokens" />
        <NumberField label="Temperature" field="temperature" min={0} max={5} step={0.1} testId="temperature" />
        <NumberField label="Top-k" field="topK" min={0} max={100000} step={1} testId="top-k" />
        <NumberField label="Seed" field="seed" min={0} max={2 ** 31 - 1} step={1} testId="seed" />
        <span className="actions">
          <button type="submit" className="primary" data-testid="generate" title={waitingFor(job)} disabled={!!job || !ready}>Generate</button>
          <button type="button" data-testid="cancel-generate" disabled={!generating} onClick={cancelRunning}>Cancel</button>
        </span>
      </form>
      {gen ? <ResultStatus model={gen.modelLabel} computedWith={gen.computedWith} stale={gen.prompt !== prompt || !sameTurn(gen, turn) ? ['prompt'] : []} computedFor={gen.prompt} noun="generation" rerun={{ label: 'Generate', run: () => void generate() }} testId="generation-status" /> : <p className="placeholder">Generate to watch the margin move token by token.</p>}
      {gen && steered ? (
        <>
          <div className="compare" data-testid="generation-compare">
            <div>
              <h3 className="unsteered-title">Unsteered</h3>
              <Continuation run={gen} prompt={gen.prompt} diverge={diverge} testId="" live={generating && !!steered.final} />
              <StopLine run={gen} max={gen.maxNewTokens} testId="" />
              <TokenRow run={gen} steeredBy={() => []} diverge={diverge} testId="" />
            </div>
            <div>
              <h3 className="steered-title">Steered <span className="muted">{steeringText}</span></h3>
              <Continuation run={steered} prompt={gen.prompt} diverge={diverge} testId="-steered" live={generating && !steered.final} />
              <StopLine run={steered} max={gen.maxNewTokens} testId="-steered" />
              <TokenRow run={steered} steeredBy={steeredBy} diverge={diverge} testId="-steered" />
            </div>
          </div>
          {bothDone && (
            <p className="divergence" data-testid="divergence" data-step={diverge ?? ''}>
              {diverge === null
                ? 'The two texts are identical: the interventions did not change any chosen token.'
                : `The texts first differ at step ${diverge}: ${quotedToken(gen.events[diverge]?.token ?? '∅')} unsteered vs ${quotedToken(steered.events[diverge]?.token ?? '∅')} steered (highlighted).`}
            </p>
          )}
          <p className="hint">Underlined blue where Δ &gt; 0 and red where Δ &lt; 0; an orange top edge marks a token drawn from a forward pass the interventions acted on.</p>
        </>
      ) : (
        // Mounted, hidden, before the first generation (an empty run): the frame of the first streamed
        // tokens then shows it and adds tokens instead of building it (issue 11, a UI that never stalls).
        <div className="generation-run" hidden={!gen}>
          <Continuation run={gen ?? NO_RUN} prompt={gen?.prompt ?? prompt} diverge={null} testId="" live={generating} />
          <StopLine run={gen ?? NO_RUN} max={gen?.maxNewTokens ?? maxNewTokens} testId="" />
          <p className="hint">Each new token, underlined blue where Δ &gt; 0 (good future ahead) and red where Δ &lt; 0; hover for its log p and Δ.</p>
          <TokenRow run={gen ?? NO_RUN} steeredBy={() => []} diverge={null} testId="" />
        </div>
      )}
      {/* Shown before the first generation (empty axes): the frame of the first streamed tokens then adds points instead of building the chart. */}
      <div className="figure">
        <div className="view-head">
          <h3>Margin curve <span className="muted">Δ per step; above the dashed line the good future leads</span></h3>
          {gen && <ExportButtons
            name={`generation-${gen.modelLabel}`}
            json={() => ({ model: gen.modelLabel, prompt: gen.prompt, good, bad, steps: gen.events, final: gen.final, interventions: gen.steering, steered: steered ? { steps: steered.events, final: steered.final } : null })}
            csv={() => [['run', 'step', 'id', 'token', `margin Δ = log p(${good}) − log p(${bad}) (nats)`, 'log_prob of the token (nats)'], ...gen.events.map((e) => ['unsteered', e.step, e.id, e.token, e.margin, e.logProb]), ...(steered?.events ?? []).map((e) => ['steered', e.step, e.id, e.token, e.margin, e.logProb])]}
            figure={() => svg.current && ({
              title: `Margin per generation step · ${gen.modelLabel}`,
              caption: [`Δ = log p(“${good}”) − log p(“${bad}”) · prompt: “${gen.prompt}”`, steered ? `unsteered: “${runText(gen)}”` : `continuation: “${runText(gen)}”`, ...(steered ? [`steered (${steeringText}): “${runText(steered)}”`] : [])],
              panels: [{ kind: 'svg', element: svg.current }],
            })}
          />}
        </div>
        <LineChart
          series={series} legend={Boolean(steered)}
          xLabel="generation step" yLabel="margin Δ (nats)" xDomain={[0, Math.max(1, (gen?.maxNewTokens ?? maxNewTokens) - 1)]} zeroLine
          svgRef={svg} label={steered ? 'Margin per generation step, steered and unsteered' : 'Margin per generation step'} testId="margin-curve"
        />
      </div>
    </section>
  );
}
