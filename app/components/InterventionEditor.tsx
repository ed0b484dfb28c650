import { useState } from 'react';
import { useStore } from '../store';
import type { InterventionDraft } from '../store/steering';
import type { InterventionType, PositionSelector } from '../../workers/protocol';
import { hookDescription, isPerHead, steerableHooks, vectorWidth } from '../lib/hooks';
import { needsVector } from '../lib/specs';
import { parsePositionList } from '../lib/lists';
import { vectorLabel } from '../lib/format';
import { vectorSiteNote } from '../lib/vector_site';
import { NumberInput } from './NumberInput';
import { useDecisionPointTokens } from './useDecisionPointTokens';
import { decisionPointText } from '../lib/decision_point_text';
import { prefixOf } from '../lib/decision_point_tokens';

/** The types the editor offers; a route type (mixture-of-experts routers) only at its router hook (steering/spec.ts ROUTE_TYPES). */
const TYPES: { type: InterventionType; title: string; site?: string }[] = [
  { type: 'add', title: 'add: h += α·v' },
  { type: 'add_norm_preserving', title: 'add, norm kept: (h + α·v)·‖h‖/‖h + α·v‖' },
  { type: 'rotate', title: 'rotate ĥ toward v̂ (angle θ or fraction t)' },
  { type: 'ablate', title: 'ablate (zero, mean, project out v)' },
  { type: 'patch', title: 'patch from a source prompt' },
  { type: 'sae_clamp', title: "clamp an SAE feature to c (x + (c − f(x))·W_dec[f])" },
  { type: 'ban_experts', title: 'ban experts (router logits −∞: the top-k is taken among the others)', site: '.mlp.hook_router_logits' },
  { type: 'force_experts', title: "force k experts (weighted by the router's p)", site: '.mlp.hook_expert_indices' },
  { type: 'patch_route', title: "patch the routing from a source prompt (its chosen experts)", site: '.mlp.hook_expert_indices' },
];

type PositionKind = 'all' | 'prompt' | 'generated' | 'explicit' | 'range';

function kindOf(p: PositionSelector): PositionKind {
  if (typeof p === 'string') return p;
  return Array.isArray(p) ? 'explicit' : 'range';
}

/** Positions: all / prompt / generated / explicit list / range [start, end). */
function PositionsField({ d }: { d: InterventionDraft }) {
  const update = useStore((s) => s.updateIntervention);
  // the decision point's positions (the futures' shared prefix counted): the default position is the decision point
  const dp = useDecisionPointTokens();
  const nPrompt = dp?.ids.length ?? 0;
  // What is typed while the field has focus ("3, " is on its way to a list); else the list itself.
  const [listText, setListText] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const kind = kindOf(d.positions);
  const setKind = (k: PositionKind) => {
    setProblem(null);
    if (k === 'explicit') update(d.id, { positions: nPrompt ? [nPrompt - 1] : [0] });
    else if (k === 'range') update(d.id, { positions: { start: 0, end: Math.max(1, nPrompt) } });
    else update(d.id, { positions: k });
  };
  return (
    <>
      <label>Positions
        <select data-testid="editor-positions" value={kind} onChange={(e) => setKind(e.target.value as PositionKind)}>
          <option value="all">all tokens</option>
          <option value="prompt">prompt only</option>
          <option value="generated" title={`every position that predicts a generated token: the last prompt token (it draws new token 0) and the generated tokens; a range from n_prompt skips the first new token. An analysis (no generated tokens) reads only its last position, ${decisionPointText(prefixOf(dp))}`}>generated (from the last prompt token)</option>
          <option value="explicit">explicit positions</option>
          <option value="range">range [start, end)</option>
        </select>
      </label>
      {kind === 'explicit' && (
        <label>List
          <input
            data-testid="editor-position-list" placeholder="3, 5, 7"
            value={listText ?? (Array.isArray(d.positions) ? d.positions.join(', ') : '')}
            onChange={(e) => {
              setListText(e.target.value);
              try { update(d.id, { positions: parsePositionList(e.target.value) }); setProblem(null); } catch (err) { setProblem((err as Error).message); }
            }}
            onBlur={() => { setListText(null); setProblem(null); }}
          />
        </label>
      )}
      {kind === 'range' && typeof d.positions === 'object' && !Array.isArray(d.positions) && (
        <span className="row">
          <label>from <NumberInput label="range start" testId="editor-range-start" integer min={0} value={d.positions.start} onChange={(v) => v !== null && update(d.id, { positions: { start: v, end: Math.max(v + 1, (d.positions as { end: number }).end) } })} /></label>
          <label>to (exclusive) <NumberInput label="range end" testId="editor-range-end" integer min={1} value={d.positions.end} onChange={(v) => v !== null && update(d.id, { positions: { start: Math.min((d.positions as { start: number }).start, v - 1), end: v } })} /></label>
        </span>
      )}
      {problem && <p className="note" data-testid="editor-positions-problem">{problem}</p>}
    </>
  );
}

/** Generation step window [start, end): off = every step. */
function StepsField({ d }: { d: InterventionDraft }) {
  const update = useStore((s) => s.updateIntervention);
  return (
    <span className="row">
      <label className="toggle">
        <input type="checkbox" data-testid="editor-steps-on" checked={d.steps !== null} onChange={(e) => update(d.id, { steps: e.target.checked ? { start: 0, end: null } : null })} />
        Only generation steps
      </label>
      {d.steps && (
        <>
          <label>from <NumberInput label="first step" testId="editor-steps-start" integer min={0} value={d.steps.start} onChange={(v) => v !== null && update(d.id, { steps: { start: v, end: d.steps!.end } })} /></label>
          <label>to (exclusive) <NumberInput label="end step (empty = to the end)" placeholder="∞ (to the end)" testId="editor-steps-end" integer min={1} value={d.steps.end} onChange={(v) => update(d.id, { steps: { start: d.steps!.start, end: v } })} /></label>
        </>
      )}
    </span>
  );
}

/** The expert ids of a ban or force ("1, 3"), checked as typed. */
function ExpertsField({ d }: { d: InterventionDraft }) {
  const update = useStore((s) => s.updateIntervention);
  const [text, setText] = useState((d.experts ?? []).join(', '));
  const [problem, setProblem] = useState<string | null>(null);
  return (
    <label>Experts
      <input
        data-testid="editor-experts" placeholder="1, 3" value={text}
        onChange={(e) => {
          setText(e.target.value);
          try { update(d.id, { experts: parsePositionList(e.target.value) }); setProblem(null); } catch (err) { setProblem((err as Error).message.replace(/position/g, 'expert id')); }
        }}
      />
      {problem && <p className="note" data-testid="editor-experts-problem">{problem}</p>}
    </label>
  );
}

/** Edits the intervention open in the list: hook, type, dose, vector, head, positions and step window. */
export function InterventionEditor() {
  const list = useStore((s) => s.interventions);
  const id = useStore((s) => s.selectedIntervention);
  const info = useStore((s) => s.info);
  const vectors = useStore((s) => s.vectors);
  const setView = useStore((s) => s.setView);
  const update = useStore((s) => s.updateIntervention);
  const saes = useStore((s) => s.saes);
  const maxNew = useStore((s) => s.generation.maxNewTokens);
  const sweep = useStore((s) => s.sweep);
  const n = list.findIndex((x) => x.id === id) + 1;
  const d = list[n - 1];
  if (!d || !info) return null;
  const hooks = steerableHooks(info.hookNames);
  const perHead = isPerHead(d.hook);
  const heads = /attn\.hook_[kv]$/.test(d.hook) ? info.nKvHeads : info.nHeads;
  const width = vectorWidth(d.hook, info, perHead && d.head !== null);
  const vector = vectors.find((v) => v.id === d.vectorId);
  const set = (patch: Partial<InterventionDraft>) => update(d.id, patch);
  const notes: string[] = [];
  if (needsVector(d) && !vector) notes.push(vectors.length ? 'Pick a vector.' : 'The library is empty: build or import a vector in the Vectors tab.');
  if (needsVector(d) && vector && width !== null && vector.dModel !== width) notes.push(`${vector.name} has ${vector.dModel} values, but ${d.hook}${perHead && d.head !== null ? ` (one head)` : ''} takes ${width}.`);
  if (d.steps && d.steps.start > 0 && d.positions === 'prompt') notes.push('Prompt positions are only read at step 0: this step window never acts on them.');
  if (d.steps && d.steps.start > 0) notes.push('Analyses run step 0 only: this intervention acts during generation alone.');
  if (d.steps && d.steps.start >= maxNew) notes.push(`The window starts at step ${d.steps.start}, but a generation of ${maxNew} tokens runs steps 0..${maxNew - 1}: it would never act.`);
  // placed by a click on the dose–response curve: its layer is the sweep's, on purpose
  const fromSweep = sweep !== null && sweep.pickedId === d.id && sweep.vectorId === d.vectorId && sweep.result.hooks.includes(d.hook);
  const site = vector && needsVector(d) ? vectorSiteNote(vector, d.hook, fromSweep) : null;
  return (
    <fieldset className="intervention-editor" data-testid="intervention-editor" data-n={n}>
      <legend>Intervention #{n}</legend>
      <label>Hook
        <select data-testid="editor-hook" value={d.hook} onChange={(e) => set({ hook: e.target.value, head: isPerHead(e.target.value) ? d.head : null })}>
          {/* its own hook, kept after loading a model without it (lib/intervention_fit.ts): shown as set, never the first hook in its place */}
          {!hooks.includes(d.hook) && <option value={d.hook} data-testid="editor-hook-missing">{d.hook} (not in {info.label})</option>}
          {hooks.map((h) => <option key={h} value={h}>{h}</option>)}
        </select>
      </label>
      <p className="hint">{hookDescription(d.hook)}</p>
      <label>Type
        <select data-testid="editor-type" value={d.type} onChange={(e) => set({ type: e.target.value as InterventionType })}>
          {TYPES.filter((t) => !t.site || d.hook.endsWith(t.site) || t.type === d.type).map((t) => <option key={t.type} value={t.type}>{t.title}</option>)}
        </select>
      </label>
      {(d.type === 'add' || d.type === 'add_norm_preserving') && (
        <label>Dose α <NumberInput label="Dose α" testId="editor-dose" value={d.dose} onChange={(v) => v !== null && set({ dose: v })} /></label>
      )}
      {d.type === 'sae_clamp' && (
        <label>Value c <NumberInput label="Value c" testId="editor-dose" value={d.dose} onChange={(v) => v !== null && set({ dose: v })} /></label>
      )}
      {d.saeFeature && (
        <p className="hint" data-testid="editor-sae-feature">SAE feature {d.saeFeature.feature} ({saes.find((x) => x.id === d.saeFeature!.sae)?.label ?? 'SAE no longer loaded'}){d.type === 'sae_clamp' ? ': clamped to c, the SAE\'s error term kept' : ': its decoder row W_dec[f], scaled to unit norm, is the vector'}</p>
      )}
      {d.type === 'sae_clamp' && !d.saeFeature && <p className="note" data-testid="editor-note">A clamp names an SAE feature: place it from the SAE features view.</p>}
      {d.type === 'rotate' && (
        <span className="row">
          <select aria-label="rotate by" data-testid="editor-rotate-by" value={d.rotateBy} onChange={(e) => set({ rotateBy: e.target.value as 'theta' | 't' })}>
            <option value="theta">angle θ (radians)</option>
            <option value="t">fraction t of the angle to v̂</option>
          </select>
          <NumberInput label={d.rotateBy === 'theta' ? 'theta' : 't'} testId="editor-dose" value={d.dose} onChange={(v) => v !== null && set({ dose: v })} />
        </span>
      )}
      {d.type === 'ablate' && (
        <label>Mode
          <select data-testid="editor-mode" value={d.mode} onChange={(e) => set({ mode: e.target.value as InterventionDraft['mode'] })}>
            <option value="project">project out v̂ (directional ablation)</option>
            <option value="mean">set to v (a mean activation)</option>
            <option value="zero">zero</option>
          </select>
        </label>
      )}
      {(d.type === 'patch' || d.type === 'patch_route') && (
        <label className="stack">{d.type === 'patch' ? 'Source prompt (its activations at the hook replace these)' : 'Source prompt (its chosen experts replace these; same token length)'}
          <textarea rows={2} data-testid="editor-source" value={d.source} onChange={(e) => set({ source: e.target.value })} />
        </label>
      )}
      {(d.type === 'ban_experts' || d.type === 'force_experts') && <ExpertsField key={`e${d.id}`} d={d} />}
      {needsVector(d) && (
        <label>Vector
          <select data-testid="editor-vector" value={d.vectorId ?? ''} onChange={(e) => set({ vectorId: e.target.value || null })}>
            <option value="">—</option>
            {vectors.map((v) => <option key={v.id} value={v.id}>{vectorLabel(v)}</option>)}
          </select>
          <button type="button" className="small" onClick={() => setView('vectors')}>Library…</button>
        </label>
      )}
      {perHead && (
        <label>Head
          <select data-testid="editor-head" value={d.head ?? ''} onChange={(e) => set({ head: e.target.value === '' ? null : Number(e.target.value) })}>
            <option value="">all heads (whole row)</option>
            {Array.from({ length: heads }, (_, h) => <option key={h} value={h}>head {h}</option>)}
            {d.head !== null && d.head >= heads && <option value={d.head} data-testid="editor-head-missing">head {d.head} (not in {info.label})</option>}
          </select>
        </label>
      )}
      <PositionsField key={`p${d.id}`} d={d} />
      <StepsField d={d} />
      {site && <p className="hint" data-testid="editor-vector-site">{site}</p>}
      {notes.map((t) => <p key={t} className="note" data-testid="editor-note">{t}</p>)}
    </fieldset>
  );
}
