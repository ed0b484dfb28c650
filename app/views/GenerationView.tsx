import { useRef } from 'react';
import { useStore } from '../store';
import { generate } from '../actions/generate';
import { cancelRunning } from '../actions/job';
import { LineChart } from '../components/LineChart';
import { ExportButtons } from '../components/ExportButtons';
import { fixed, signed, visibleToken } from '../lib/format';
import type { GenerationSettings } from '../store/experiment';

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

/**
 * Generation: settings, the text as it streams, each token's margin, and the margin curve Δ per
 * step (DESIGN.md §3 "Margin curve during generation").
 */
export function GenerationView() {
  const gen = useStore((s) => s.gen);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const nCtx = useStore((s) => s.info?.nCtx ?? 4096);
  const good = useStore((s) => s.good.value);
  const bad = useStore((s) => s.bad.value);
  const svg = useRef<SVGSVGElement | null>(null);
  const generating = job?.kind === 'generate';
  const events = gen?.events ?? [];
  const text = gen?.final ? gen.final.text : events.map((e) => e.token).join('');
  return (
    <section className="view" data-testid="generation-view">
      <header className="view-head">
        <h2>Generation</h2>
        <p className="muted">Temperature 0 is greedy decoding. The curve shows, at each step, Δ = log p(good) − log p(bad) in the distribution the token was drawn from.</p>
      </header>
      <form className="row settings" onSubmit={(e) => { e.preventDefault(); if (!job && ready) void generate(); }}>
        <NumberField label="Max new tokens" field="maxNewTokens" min={1} max={nCtx} step={1} testId="max-new-tokens" />
        <NumberField label="Temperature" field="temperature" min={0} max={5} step={0.1} testId="temperature" />
        <NumberField label="Top-k" field="topK" min={0} max={100000} step={1} testId="top-k" />
        <NumberField label="Seed" field="seed" min={0} max={2 ** 31 - 1} step={1} testId="seed" />
        <button type="submit" className="primary" data-testid="generate" disabled={!!job || !ready}>Generate</button>
        <button type="button" data-testid="cancel-generate" disabled={!generating} onClick={cancelRunning}>Cancel</button>
      </form>
      {gen ? (
        <>
          <div className="generated" data-testid="generation-output" data-done={gen.final ? 'true' : 'false'}>
            <span className="prompt-text">{gen.prompt}</span>
            <span className="new-text" data-testid="generated-text">{text}</span>
            {generating && <span className="caret" aria-hidden="true">▍</span>}
          </div>
          <p className="muted" data-testid="generation-stop">
            {gen.final ? `${gen.final.ids.length} tokens · stopped: ${STOP[gen.final.stop]}` : `${events.length} of ${gen.maxNewTokens} tokens…`}
          </p>
          <p className="hint">Each new token, underlined blue where Δ &gt; 0 (good future ahead) and red where Δ &lt; 0; hover for its log p and Δ.</p>
          <ol className="token-strip generated-tokens" aria-label="generated tokens">
            {events.map((e) => (
              <li key={e.step} data-testid="generated-token" data-id={e.id} data-step={e.step} title={`step ${e.step} · id ${e.id} · log p ${fixed(e.logProb, 3)} · Δ ${signed(e.margin, 4)}`}
                className={e.margin >= 0 ? 'pos' : 'neg'}>
                <span className="idx">{e.step}</span>
                <span className="txt">{visibleToken(e.token)}</span>
              </li>
            ))}
          </ol>
          <div className="figure">
            <div className="view-head">
              <h3>Margin curve <span className="muted">Δ per step; above the dashed line the good future leads</span></h3>
              <ExportButtons
                name={`generation-${gen.modelLabel}`}
                json={() => ({ model: gen.modelLabel, prompt: gen.prompt, good, bad, steps: events, final: gen.final })}
                csv={() => [['step', 'id', 'token', 'margin', 'log_prob'], ...events.map((e) => [e.step, e.id, e.token, e.margin, e.logProb])]}
                picture={() => svg.current}
                caption={[`Margin per generation step · ${gen.modelLabel}`, `Δ = log p(“${good}”) − log p(“${bad}”) · prompt: “${gen.prompt}”`, `continuation: “${text}”`]}
              />
            </div>
            <LineChart
              series={[{ name: 'Δ', color: '#0969da', points: events.map((e) => [e.step, e.margin] as [number, number]) }]}
              xLabel="generation step" yLabel="margin Δ (nats)" xDomain={[0, Math.max(1, gen.maxNewTokens - 1)]} zeroLine
              svgRef={svg} label="Margin per generation step" testId="margin-curve"
            />
          </div>
        </>
      ) : <p className="placeholder">Generate to watch the margin move token by token.</p>}
    </section>
  );
}
