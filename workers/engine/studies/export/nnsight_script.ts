/**
 * *Export as nnsight script*: one experiment as a self-contained Python script over nnsight's
 * `LanguageModel` / `trace` / `session` / `generate` API (written against nnsight 0.7.0, read from
 * ndif-team/nnsight at that tag: README, docs/patterns/logit-lens.md, docs/gotchas/remote.md), with
 * `REMOTE` switchable to run on NDIF. It computes the sections of a results file
 * (results_file.ts, docs/results-format.md) with the workbench's definitions (DESIGN.md §3) and
 * writes one. The app and the runner (`branchpoint nnsight`) both call nnsightScript.
 */
import { futureInput, type Experiment } from '../../experiment';
import { RESULTS_FORMAT, RESULTS_VERSION } from './results_file';

/** The nnsight release whose documented API the script is written against. */
export const NNSIGHT_VERSION = '0.7.0';

/** The patching grid to write beside the experiment (the Patching view's setup; not part of the experiment file). */
export interface NnsightPatching {
  /** The corrupted prompt; the clean one is the experiment's prompt. */
  corrupt: string;
  /** The residual before each block (the one hook both the grid study and the script patch). */
  hook: 'resid_pre';
  direction: 'denoise' | 'noise';
}

/** Why an experiment cannot be exported: what and why, before any script is written. */
export class NnsightExportError extends Error {
  override name = 'NnsightExportError';
}

const RESID = /^blocks\.(\d+)\.hook_resid_(pre|post)$/;

/** A JSON value as a Python literal (strings via JSON escapes, which Python reads the same). @throws NnsightExportError for a non-finite number. */
export function pyLiteral(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new NnsightExportError(`the number ${v} cannot be written to the script`);
    return Number.isInteger(v) ? String(v) : JSON.stringify(v);
  }
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(pyLiteral).join(', ')}]`;
  return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${JSON.stringify(k)}: ${pyLiteral(x)}`).join(', ')}}`;
}

/**
 * The model id the script loads: a Hub repo as is; a bundled model the folder of its HF files in the
 * Branchpoint repository (public/models/<name>, the files the app serves: it is on no Hub under its
 * name); anything else its name, which the user replaces with a Hub id or a local folder.
 * `folder`: the script stops before loading, saying what to set, while MODEL_ID is still this and no such folder exists.
 */
export function nnsightModelId(e: Experiment): { id: string; revision: string | null; note: string; folder: boolean } {
  const m = e.model;
  if (m.kind === 'hub') return { id: m.repo, revision: m.revision === 'main' ? null : m.revision, note: '', folder: false };
  if (m.kind === 'bundled') return { id: `public/models/${m.name}`, revision: null, note: `  # the workbench's bundled model "${m.name}" (not on the Hugging Face Hub under that name): its HF files in the Branchpoint repository (run from its root), or the app's models/${m.name}/ downloaded`, folder: true };
  const name = m.kind === 'local' ? m.name : m.label ?? m.url;
  return { id: name, revision: null, note: `  # the workbench's ${m.kind} model "${name}": put its Hugging Face id or a local folder of its HF files here`, folder: true };
}

/**
 * A future's alternatives as the script resolves them after the prompt: ids as lists of numbers, text
 * as strings it tokenises in context (future_ids; the shared prefix needs whole sequences, not first ids).
 * @throws Error for a tool-call future (the script scores text or ids, not a rendered tool call).
 */
function futureAlternatives(f: Experiment['good']): (string | number[])[] {
  const input = futureInput(f);
  if ('toolCall' in input) throw new Error(`the tool-call future "${input.toolCall.name}" is not exported to the nnsight script (its tokens are the chat template's rendering of the call, which the script does not compute): give the future as text or ids`);
  return 'ids' in input ? input.ids.map((s) => [...s]) : input.text.split('|').filter((s) => s !== '');
}

/**
 * The script's chat-turn constants: SYSTEM (the system prompt, or None), TOOLS (the tools offered,
 * apply_chat_template's `tools`) and ENABLE_THINKING (the template variable, None: not passed), as
 * promptConversation / PromptCodec build the turn (an empty system prompt is no system message; no
 * tools pass tools=None). Strings and tools go through json.loads of a JSON string literal.
 */
function chatTurnLines(e: Experiment): string[] {
  return [
    '# With CHAT_TEMPLATE: the chat turn around the prompt (apply_chat_template\'s messages, tools, enable_thinking; None: not passed).',
    `SYSTEM = ${e.system === undefined ? 'None' : `json.loads(${JSON.stringify(JSON.stringify(e.system))})`}`,
    `TOOLS = json.loads(${JSON.stringify(JSON.stringify(e.tools))})`,
    `ENABLE_THINKING = ${pyLiteral(e.enableThinking ?? null)}`,
  ];
}

/** An enabled intervention as the script writes it: α·vector added at blocks[layer]'s input (pre) or output (post). */
export interface PlanSteering {
  layer: number;
  at: 'pre' | 'post';
  alpha: number;
  /** [d_model] */
  vector: number[];
  /** "all" | "prompt" | "generated" | positions | {start, end} (end exclusive). */
  positions: unknown;
}

/** The Dose–response view's sweep: dose·vector added at every prompt position of blocks[l], l in layers (null: all). */
export interface PlanSweep {
  at: 'pre' | 'post';
  layers: number[] | null;
  doses: number[];
  /** [d_model] */
  vector: number[];
}

/** What an export computes, checked: the sections of the results file it will write. */
export interface NnsightPlan {
  steering: PlanSteering[];
  patching: NnsightPatching | null;
  sweep: PlanSweep | null;
  /** The intervention window over N greedy steps, when there is steering. */
  window: { max_new_tokens: number } | null;
}

/**
 * What an experiment's export computes (the script and `branchpoint results` share it).
 * @throws NnsightExportError for what the script cannot express (see steeringOf, sweepOf; a window with sampling).
 */
export function nnsightPlan(e: Experiment, patching?: NnsightPatching): NnsightPlan {
  const steering = steeringOf(e);
  if (steering.length && e.generation.temperature !== 0) throw new NnsightExportError(`the intervention window is exported with greedy generation; the experiment samples (temperature ${e.generation.temperature}): set temperature 0 to export`);
  return { steering, patching: patching ?? null, sweep: sweepOf(e), window: steering.length ? { max_new_tokens: e.generation.maxNewTokens } : null };
}

/** Positions a steering spec names, as the script's {"all"} / list / [start, end) form. */
function positionsOf(p: Experiment['interventions'][number]['positions']): unknown {
  if (p === 'all') return 'all';
  if (p === 'prompt') return 'prompt';
  if (p === 'generated') return 'generated';
  if (Array.isArray(p)) return p;
  return { start: p.start, end: p.end };
}

/**
 * The experiment's enabled interventions as the script's steering list.
 * @throws NnsightExportError for one the script does not write (not `add` at a residual hook, an SAE
 *   feature, a step window, a vector left out of a link), naming it.
 */
function steeringOf(e: Experiment): PlanSteering[] {
  return e.interventions.flatMap((d, i) => {
    if (!d.enabled) return [];
    const label = `intervention #${i + 1} (${d.type} at ${d.hook})`;
    const m = RESID.exec(d.hook);
    if (d.type !== 'add' || !m || d.sae) throw new NnsightExportError(`${label}: the nnsight export writes "add" interventions at blocks.L.hook_resid_pre / hook_resid_post only; disable it to export`);
    if (d.steps) throw new NnsightExportError(`${label}: it has a step window; the export writes interventions on every step (the window study sets the start step); remove the step window to export`);
    const v = d.vector === null ? null : e.vectors[d.vector];
    if (!v || v.values === null) throw new NnsightExportError(`${label}: its vector is not in this experiment (left out of a link); open the experiment file instead`);
    return [{ layer: Number(m[1]), at: m[2] as 'pre' | 'post', alpha: d.dose, vector: v.values, positions: positionsOf(d.positions) }];
  });
}

/** The Dose–response view's sweep as the script's SWEEP, or null. @throws NnsightExportError for a sweep the script does not write. */
function sweepOf(e: Experiment): PlanSweep | null {
  const s = e.view.sweep;
  if (!s || s.vector === null) return null;
  const site = /^hook_resid_(pre|post)$/.exec(s.site);
  if (!site || s.type !== 'add') throw new NnsightExportError(`the dose–response sweep (${s.type} at blocks.{l}.${s.site}): the nnsight export writes "add" sweeps at hook_resid_pre / hook_resid_post only`);
  const v = e.vectors[s.vector];
  if (!v || v.values === null) throw new NnsightExportError('the dose–response sweep: its vector is not in this experiment (left out of a link); open the experiment file instead');
  const doses = s.doses.replace(/−/g, '-').split(/[\s,;]+/).filter(Boolean).map(Number);
  if (!doses.length || doses.some((x) => !Number.isFinite(x))) throw new NnsightExportError(`the dose–response sweep: doses "${s.doses}" are not a list of numbers`);
  const t = s.layers.trim();
  let layers: number[] | null = null;
  if (t !== '' && t !== 'all') {
    layers = [];
    for (const item of t.split(/[\s,]+/).filter(Boolean)) {
      const r = /^(\d+)(?:[-–](\d+))?$/.exec(item);
      if (!r) throw new NnsightExportError(`the dose–response sweep: layers "${s.layers}": "${item}" is not an index or a range like 0-4`);
      for (let l = Number(r[1]); l <= Number(r[2] ?? r[1]); l++) if (!layers.includes(l)) layers.push(l);
    }
  }
  return { at: site[1] as 'pre' | 'post', layers, doses, vector: v.values };
}

/**
 * The nnsight script for an experiment.
 * @param patching the patching grid to compute too (the Patching view's setup), or none.
 * @param model the model id the script loads (default: the experiment's Hub repo, or its name with a note to replace it).
 * @returns Python 3 source (UTF-8) that writes a results file (docs/results-format.md).
 * @throws NnsightExportError before writing anything for what the script cannot express (see steeringOf,
 *   sweepOf; a window with sampling), and Error for a future written as bad ids.
 */
export function nnsightScript(e: Experiment, patching?: NnsightPatching, model?: string): string {
  const { steering: steer, sweep, window } = nnsightPlan(e, patching);
  const m = model ? { id: model, revision: null, note: '', folder: false } : nnsightModelId(e);
  const guard = m.folder ? `
if MODEL_ID == ${pyLiteral(m.id)} and not os.path.isdir(MODEL_ID):
    sys.exit(f"MODEL_ID = {MODEL_ID!r} is not a folder here: set MODEL_ID (top of this script) to a Hugging Face id or a folder of the model's HF files (config.json, tokenizer.json, model.safetensors)")
` : '';
  const title = (e.title ?? 'Branchpoint experiment').replace(/[\r\n]+/g, ' ').replace(/"""/g, '"\u200b""').replace(/\\/g, '/');
  const constants = [
    `REMOTE = False  # True: run on NDIF (nnsight.CONFIG.set_default_api_key("...") first)`,
    `MODEL_ID = ${pyLiteral(m.id)}${m.note}`,
    `REVISION = ${pyLiteral(m.revision)}`,
    `NNSIGHT_VERSION = ${pyLiteral(NNSIGHT_VERSION)}`,
    `OUT = "branchpoint-results.json"`,
    '',
    '# The experiment as the workbench saved it (copied into the results file).',
    `EXPERIMENT = json.loads(${JSON.stringify(JSON.stringify(e))})`,
    `PROMPT = ${pyLiteral(e.prompt)}`,
    `CHAT_TEMPLATE = ${pyLiteral(e.chatTemplate)}`,
    ...chatTurnLines(e),
    '# Alternatives of each future ("|"-separated: a token set): a string is tokenised after the prompt, a list is token ids.',
    `GOOD = ${pyLiteral(futureAlternatives(e.good))}`,
    `BAD = ${pyLiteral(futureAlternatives(e.bad))}`,
    '# Enabled interventions: alpha * vector added to the residual stream at blocks[layer] input ("pre") or output ("post").',
    `STEERING = ${pyLiteral(steer)}`,
    `PATCH = ${pyLiteral(patching ? { corrupt: patching.corrupt, direction: patching.direction } : null)}`,
    `SWEEP = ${pyLiteral(sweep)}`,
    `WINDOW = ${pyLiteral(window)}`,
  ].join('\n');
  return `#!/usr/bin/env python3
"""${title} - a Branchpoint experiment as an nnsight script.

Written by Branchpoint against nnsight ${NNSIGHT_VERSION} (LanguageModel, .trace, .session, .generate,
.save); it warns when another version is installed. It computes, with the workbench's definitions
(margin = log p(good) - log p(bad) over first-token sets, in nats, at the decision point: after
the futures' shared prefix when both are single branches that open with the same tokens):
  lens    logit-lens margins [n_layers+1][n_tokens] of the (steered) prompt
  patch   the activation-patching recovery grid [n_layers][n_tokens] (when PATCH is set)
  sweep   the dose-response margins [layer][dose] (when SWEEP is set)
  window  the intervention window: the outcome of steering from step k (when STEERING is not empty)
and writes them to OUT as a Branchpoint results file (docs/results-format.md); open it in the
workbench with Open results...

PARITY CHECK FIRST: run this script with REMOTE = False on the small model the experiment was made
with, and compare its results with the workbench's (\`branchpoint results --experiment FILE --out R.json\`,
or the app's views). Only when they agree, set REMOTE = True and MODEL_ID to the large model, and queue
it on NDIF.
"""
import json
import math
import os
import sys

import torch
import nnsight
from nnsight import LanguageModel

${constants}
${guard}
if not str(nnsight.__version__).startswith(NNSIGHT_VERSION):
    print(f"warning: written for nnsight {NNSIGHT_VERSION}; this is {nnsight.__version__}", file=sys.stderr)

model = LanguageModel(MODEL_ID, revision=REVISION or "main", device_map="auto", dispatch=not REMOTE)
tok = model.tokenizer
# Where the blocks, the final norm and the unembedding are (HF module names per model_type).
PATHS = {"gpt2": ("transformer.h", "transformer.ln_f", "lm_head"), "gpt_neox": ("gpt_neox.layers", "gpt_neox.final_layer_norm", "embed_out")}


def envoy(path):
    node = model
    for name in path.split("."):
        node = getattr(node, name)
    return node


layers_path, norm_path, head_path = PATHS.get(model.config.model_type, ("model.layers", "model.norm", "lm_head"))
LAYERS, NORM, HEAD = envoy(layers_path), envoy(norm_path), envoy(head_path)
N_LAYERS = model.config.num_hidden_layers


def prompt_text(text):
    """The text the tokenizer reads for a prompt and whether it adds special tokens, as the workbench:
    with the chat template, the chat turn (system prompt, tools, enable_thinking when set) rendered to
    text, without special tokens (the template writes its own BOS); without it, the text, with them."""
    if CHAT_TEMPLATE:
        messages = ([{"role": "system", "content": SYSTEM}] if SYSTEM else []) + [{"role": "user", "content": text}]
        thinking = {} if ENABLE_THINKING is None else {"enable_thinking": ENABLE_THINKING}
        return tok.apply_chat_template(messages, tools=TOOLS or None, add_generation_prompt=True, tokenize=False, **thinking), False
    return text, True


def encode(text):
    """The prompt's ids as the workbench reads them (prompt_text, tokenised)."""
    rendered, special = prompt_text(text)
    return list(tok(rendered, add_special_tokens=special).input_ids)


def future_ids(alternatives, prompt_ids):
    """Each alternative's ids after the prompt, as the workbench resolves a future: text tokenised in
    context (the prompt's text + the alternative, the prompt's ids cut off when they begin it; else the
    alternative alone), ids as written."""
    rendered, special = prompt_text(PROMPT)
    n = len(prompt_ids)
    seqs = []
    for a in alternatives:
        if isinstance(a, list):
            seqs.append(list(a))
            continue
        full = list(tok(rendered + a, add_special_tokens=special).input_ids)
        seqs.append(full[n:] if len(full) > n and full[:n] == prompt_ids else list(tok(a, add_special_tokens=False).input_ids))
    return seqs


def shared_prefix_length(good, bad):
    """k: the leading ids two single-branch futures share, leaving each at least one; 0 for token sets."""
    if len(good) != 1 or len(bad) != 1:
        return 0
    g, b = good[0], bad[0]
    k = 0
    while k < min(len(g), len(b)) - 1 and g[k] == b[k]:
        k += 1
    return k


def first_ids(seqs):
    """The distinct first ids of a future's alternatives: the token set a margin scores."""
    ids = []
    for s in seqs:
        if s[0] not in ids:
            ids.append(s[0])
    return ids


def positions(spec, n):
    """The absolute positions a steering spec covers among n positions."""
    if spec in ("all", "prompt", "generated"):
        lo = 0 if spec != "generated" else len(PROMPT_IDS)
        hi = n if spec != "prompt" else len(PROMPT_IDS)
        return list(range(lo, min(hi, n)))
    if isinstance(spec, dict):
        return list(range(spec["start"], min(spec["end"], n)))
    return [p for p in spec if p < n]


# The decision point (as the workbench's): when both futures are single branches whose first K >= 1
# tokens agree, those K ids are appended to the prompt (teacher-forced) and every margin compares the
# tokens where the futures part; token sets are scored at the prompt's end as they are.
PROMPT_IDS = encode(PROMPT)
GOOD_SEQS, BAD_SEQS = future_ids(GOOD, PROMPT_IDS), future_ids(BAD, PROMPT_IDS)
K = shared_prefix_length(GOOD_SEQS, BAD_SEQS)
PREFIX_IDS = GOOD_SEQS[0][:K]
if K:
    prefix_text = tok.decode(PREFIX_IDS)
    cut = min([12] + [i for i in [prefix_text.find("\\n")] if i > 0])
    shown = prefix_text[:cut] + "\u2026" if len(prefix_text) > cut else prefix_text
    print(f"decision point after the shared prefix \`{shown}\`, {K} token{'' if K == 1 else 's'}")
    PROMPT_IDS = PROMPT_IDS + PREFIX_IDS
    GOOD_SEQS, BAD_SEQS = [GOOD_SEQS[0][K:]], [BAD_SEQS[0][K:]]
T = len(PROMPT_IDS)
GOOD_IDS, BAD_IDS = first_ids(GOOD_SEQS), first_ids(BAD_SEQS)
N_GEN = WINDOW["max_new_tokens"] if WINDOW else 0
# Each intervention as (layer, "pre"/"post", alpha * vector, its positions among prompt + generated
# tokens), in the order the forward pass reaches them (nnsight reads modules in execution order).
STEER = sorted(((s["layer"], s["at"], [s["alpha"] * x for x in s["vector"]], positions(s["positions"], T + N_GEN)) for s in STEERING), key=lambda s: (s[0], s[1] != "pre"))
results = {
    "format": ${pyLiteral(RESULTS_FORMAT)},
    "version": ${RESULTS_VERSION},
    "model": MODEL_ID,
    "where_ran": "NDIF remote" if REMOTE else "nnsight local",
    "produced_by": f"nnsight {nnsight.__version__}",
    "experiment": EXPERIMENT,
}

# lens: the residual stream before block 0 and after every block, through the final norm and the
# unembedding (the logit lens), with the enabled interventions applied.
with model.session(remote=REMOTE):
    with model.trace(PROMPT_IDS):
        rows = list().save()
        for l in range(N_LAYERS):
            h = LAYERS[l].input
            for (sl, at, vec, pos) in STEER:
                pos = [p for p in pos if p < T]
                if sl == l and at == "pre" and pos:
                    h[0, pos] += torch.tensor(vec, dtype=h.dtype, device=h.device)
            if l == 0:
                logp = HEAD(NORM(h))[0].float().log_softmax(-1)
                rows.append((torch.logsumexp(logp[:, GOOD_IDS], -1) - torch.logsumexp(logp[:, BAD_IDS], -1)).cpu())
            o = LAYERS[l].output
            h = o[0] if isinstance(o, tuple) else o
            for (sl, at, vec, pos) in STEER:
                pos = [p for p in pos if p < T]
                if sl == l and at == "post" and pos:
                    h[0, pos] += torch.tensor(vec, dtype=h.dtype, device=h.device)
            logp = HEAD(NORM(h))[0].float().log_softmax(-1)
            rows.append((torch.logsumexp(logp[:, GOOD_IDS], -1) - torch.logsumexp(logp[:, BAD_IDS], -1)).cpu())
        logp = HEAD.output[0].float().log_softmax(-1)
        final = (torch.logsumexp(logp[:, GOOD_IDS], -1) - torch.logsumexp(logp[:, BAD_IDS], -1)).cpu().save()
results["lens"] = {
    "ids": PROMPT_IDS,
    "tokens": tok.convert_ids_to_tokens(PROMPT_IDS),
    "lens_margin": [r.tolist() for r in rows],
    "final_margin": final.tolist(),
}

# patch: r = (margin_patched - margin_corrupt) / (margin_clean - margin_corrupt) at the last position,
# the residual entering one block (hook_resid_pre) at one position patched from the source run into the target run.
if PATCH:
    CORRUPT_IDS = encode(PATCH["corrupt"]) + PREFIX_IDS  # the shared prefix teacher-forced after both prompts
    if len(CORRUPT_IDS) != T:
        sys.exit(f"the corrupted prompt has {len(CORRUPT_IDS)} tokens, the clean one {T}: patching needs equal lengths")
    source_ids, target_ids = (PROMPT_IDS, CORRUPT_IDS) if PATCH["direction"] == "denoise" else (CORRUPT_IDS, PROMPT_IDS)
    with model.session(remote=REMOTE):
        ends = list().save()
        for ids in (PROMPT_IDS, CORRUPT_IDS):
            with model.trace(ids):
                logp = HEAD.output[0, -1].float().log_softmax(-1)
                ends.append(float(torch.logsumexp(logp[GOOD_IDS], -1) - torch.logsumexp(logp[BAD_IDS], -1)))
        with model.trace(source_ids):
            acts = list()
            for l in range(N_LAYERS):
                acts.append(LAYERS[l].input.clone())
        patched = list().save()
        for l in range(N_LAYERS):
            row = list()
            for t in range(T):
                with model.trace(target_ids):
                    LAYERS[l].input[0, t] = acts[l][0, t]
                    logp = HEAD.output[0, -1].float().log_softmax(-1)
                    row.append(float(torch.logsumexp(logp[GOOD_IDS], -1) - torch.logsumexp(logp[BAD_IDS], -1)))
            patched.append(row)
    clean, corrupt = ends[0], ends[1]
    d = clean - corrupt
    results["patch"] = {
        "hook": "blocks.{l}.hook_resid_pre", "direction": PATCH["direction"], "metric": "final",
        "clean": PROMPT, "corrupt": PATCH["corrupt"], "clean_tokens": tok.convert_ids_to_tokens(PROMPT_IDS),
        "clean_margin": clean, "corrupt_margin": corrupt,
        "recovery": [[(p - corrupt) / d if d != 0 else None for p in row] for row in patched],
    }

# sweep: the margin at the last prompt position with dose * vector added at every prompt position of one block.
if SWEEP:
    sweep_layers = SWEEP["layers"] if SWEEP["layers"] is not None else list(range(N_LAYERS))
    with model.session(remote=REMOTE):
        margins = list().save()
        for l in sweep_layers:
            row = list()
            for dose in SWEEP["doses"]:
                with model.trace(PROMPT_IDS):
                    if SWEEP["at"] == "pre":
                        h = LAYERS[l].input
                    else:
                        o = LAYERS[l].output
                        h = o[0] if isinstance(o, tuple) else o
                    h[0] += dose * torch.tensor(SWEEP["vector"], dtype=h.dtype, device=h.device)
                    logp = HEAD.output[0, -1].float().log_softmax(-1)
                    row.append(float(torch.logsumexp(logp[GOOD_IDS], -1) - torch.logsumexp(logp[BAD_IDS], -1)))
            margins.append(row)
    results["sweep"] = {
        "layers": sweep_layers, "doses": SWEEP["doses"], "hooks": [f"blocks.{l}.hook_resid_{SWEEP['at']}" for l in sweep_layers],
        "margin": [list(r) for r in margins], "unsteered_margin": results["lens"]["final_margin"][-1],
    }

# window: greedy generation of N tokens with the interventions switched on from step k (step 0 = the
# prompt pass, step s >= 1 the forward of generated token s), k = 0..N-1, and without them (k = N);
# the outcome is the mean margin over the N steps.
if WINDOW:
    N = WINDOW["max_new_tokens"]
    with model.session(remote=REMOTE):
        outcomes = list().save()
        for k in range(N + 1):
            with model.generate(PROMPT_IDS, max_new_tokens=N, do_sample=False) as tracer:
                steps = list()
                for step in tracer.iter[:N]:
                    offset = 0 if step == 0 else T + step - 1
                    width = T if step == 0 else 1
                    for l in range(N_LAYERS):
                        for (sl, at, vec, pos) in STEER:
                            local = [p - offset for p in pos if offset <= p < offset + width]
                            if sl == l and step >= k and local:
                                if at == "pre":
                                    h = LAYERS[l].input
                                else:
                                    o = LAYERS[l].output
                                    h = o[0] if isinstance(o, tuple) else o
                                h[0, local] += torch.tensor(vec, dtype=h.dtype, device=h.device)
                    logp = HEAD.output[0, -1].float().log_softmax(-1)
                    steps.append(float(torch.logsumexp(logp[GOOD_IDS], -1) - torch.logsumexp(logp[BAD_IDS], -1)))
                outcomes.append(sum(steps) / len(steps))
    ks = list(range(N))
    unsteered = outcomes[N]
    flips = [k for k in ks if unsteered != 0 and (outcomes[k] > 0) != (unsteered > 0) and outcomes[k] != 0]
    results["window"] = {
        "max_new_tokens": N, "ks": ks, "outcome": [outcomes[k] for k in ks],
        "unsteered_outcome": unsteered, "point_of_no_return": flips[-1] if flips else None,
    }

with open(OUT, "w", encoding="utf-8") as f:
    json.dump(results, f, allow_nan=False)
print(f"wrote {OUT} ({', '.join(k for k in ('lens', 'patch', 'sweep', 'window') if k in results)}; {results['where_ran']})")
`;
}
