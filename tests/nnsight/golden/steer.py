#!/usr/bin/env python3
"""Steered vs unsteered story - a Branchpoint experiment as an nnsight script.

Written by Branchpoint against nnsight 0.7.0 (LanguageModel, .trace, .session, .generate,
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
with, and compare its results with the workbench's (`branchpoint results --experiment FILE --out R.json`,
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

REMOTE = False  # True: run on NDIF (nnsight.CONFIG.set_default_api_key("...") first)
MODEL_ID = "public/models/stories260K"  # the workbench's bundled model "stories260K" (not on the Hugging Face Hub under that name): its HF files in the Branchpoint repository (run from its root), or the app's models/stories260K/ downloaded
REVISION = None
NNSIGHT_VERSION = "0.7.0"
OUT = "branchpoint-results.json"

# The experiment as the workbench saved it (copied into the results file).
EXPERIMENT = json.loads("{\"format\":\"branchpoint-experiment\",\"version\":3,\"title\":\"Steered vs unsteered story\",\"note\":\"Same seed, greedy: with happy − sad added (α = 4) Ben feels “proud” instead of “scared” from the first token, and Δ(happy − sad) at the first step rises from +0.15 to +3.48 nats.\",\"model\":{\"kind\":\"bundled\",\"name\":\"stories260K\"},\"prompt\":\"It was a rainy day and Ben could not go outside. He felt very\",\"chatTemplate\":false,\"tools\":[],\"good\":{\"mode\":\"text\",\"value\":\" happy\"},\"bad\":{\"mode\":\"text\",\"value\":\" sad\"},\"generation\":{\"maxNewTokens\":4,\"temperature\":0,\"topK\":0,\"seed\":0},\"vectors\":[{\"name\":\"happy − sad (CAA)\",\"hook\":\"blocks.3.hook_resid_post\",\"model\":\"stories260K\",\"dModel\":64,\"provenance\":{\"method\":\"caa\",\"position\":\"last\",\"positive\":[\"Lily got a new puppy for her birthday. She hugged it and felt\",\"Tom won the race at school. All his friends cheered, and he felt\",\"The sun was shining and the birds were singing. Sue played all day and felt\",\"Mom baked a big cake for Ben. He gave her a hug and felt\",\"Mia found a pretty flower in the garden. She showed it to her dad and felt\",\"The little bird learned to fly. It sang a song in the sky and felt\",\"Max and his friend played with the ball. They had so much fun and felt\",\"Grandma gave Anna a big warm hug. Anna smiled and felt\",\"The dog got a big bone. He wagged his tail and felt\",\"Sam made a new friend at the park. They shared their toys and felt\",\"The kids built a big sand castle at the beach. They laughed and felt\",\"Lucy's kitten came back home. She gave it some milk and felt\",\"Dad took Tim to the zoo. Tim saw a big lion, clapped his hands and felt\",\"The girl got a shiny new dress. She danced around and felt\",\"Jack shared his candy with his sister. She thanked him, and Jack felt\",\"The boy found his lost teddy bear. He held it tight and felt\"],\"negative\":[\"Lily lost her puppy in the park. She looked everywhere and felt\",\"Tom fell down in the race at school. He hurt his knee, and he felt\",\"The rain was falling and the sky was dark. Sue sat alone all day and felt\",\"Ben dropped the big cake on the floor. He began to cry and felt\",\"Mia's flower died in the garden. She showed it to her dad and felt\",\"The little bird hurt its wing. It could not fly in the sky and felt\",\"Max's friend moved far away. He had no one to play with and felt\",\"Grandma was sick and far away. Anna was alone and felt\",\"The dog was left outside in the cold. He whined and felt\",\"Sam had no friends at the park. Nobody shared their toys and he felt\",\"A big wave broke the sand castle at the beach. The kids cried and felt\",\"Lucy's kitten ran away and did not come back. She cried and felt\",\"Dad was too busy to take Tim to the zoo. Tim sat in his room and felt\",\"The girl tore her new dress. She cried and felt\",\"Jack took his sister's candy. She cried, and Jack felt\",\"The boy lost his teddy bear. He could not find it and felt\"]},\"createdAt\":\"\",\"values\":[0.08746281266212463,-0.27044084668159485,0.17135126888751984,-0.03845611959695816,0.01787642017006874,0.14735467731952667,0.022054877132177353,0.08422546833753586,0.08704078197479248,-0.09642651677131653,0.10868656635284424,-0.01580989733338356,0.014651544392108917,0.20286239683628082,-0.06038479506969452,0.19129660725593567,-0.08920523524284363,0.083833709359169,-0.030851297080516815,-0.10177867859601974,-0.03813977539539337,0.09419101476669312,0.028647251427173615,0.07010181993246078,-0.11598050594329834,0.002503975760191679,-0.11337680369615555,0.05878075957298279,0.026014933362603188,-0.005663244053721428,0.0863506942987442,-0.14528369903564453,0.06752212345600128,0.09721183776855469,0.1152491420507431,0.007956072688102722,-0.16969716548919678,-0.09579262882471085,0.0800107941031456,-0.015093397349119186,-0.06233064830303192,-0.10064476728439331,-0.011105120182037354,-0.13446874916553497,0.016898218542337418,0.06718945503234863,0.17677530646324158,0.16284477710723877,0.06320586800575256,-0.11881421506404877,-0.14939947426319122,-0.1260262429714203,0.09465927630662918,-0.14318788051605225,-0.026973992586135864,-0.06682690232992172,0.033995047211647034,0.04194312542676926,0.049233000725507736,0.15815699100494385,-0.06988243758678436,0.236424058675766,0.14440298080444336,0.021967031061649323]}],\"interventions\":[{\"enabled\":true,\"hook\":\"blocks.3.hook_resid_post\",\"type\":\"add\",\"dose\":4,\"rotateBy\":\"theta\",\"mode\":\"zero\",\"vector\":0,\"source\":\"\",\"sae\":null,\"head\":null,\"positions\":\"all\",\"steps\":null}],\"saes\":[],\"view\":{\"name\":\"generation\",\"showDifference\":false,\"showTables\":false,\"sinkEps\":0.3,\"heatmapScale\":\"robust\",\"selection\":null}}")
PROMPT = "It was a rainy day and Ben could not go outside. He felt very"
CHAT_TEMPLATE = False
# With CHAT_TEMPLATE: the chat turn around the prompt (apply_chat_template's messages, tools, enable_thinking; None: not passed).
SYSTEM = None
TOOLS = json.loads("[]")
ENABLE_THINKING = None
# Alternatives of each future ("|"-separated: a token set): a string is tokenised after the prompt, a list is token ids.
GOOD = [" happy"]
BAD = [" sad"]
# Enabled interventions: alpha * vector added to the residual stream at blocks[layer] input ("pre") or output ("post").
STEERING = [{"layer": 3, "at": "post", "alpha": 4, "vector": [0.08746281266212463, -0.27044084668159485, 0.17135126888751984, -0.03845611959695816, 0.01787642017006874, 0.14735467731952667, 0.022054877132177353, 0.08422546833753586, 0.08704078197479248, -0.09642651677131653, 0.10868656635284424, -0.01580989733338356, 0.014651544392108917, 0.20286239683628082, -0.06038479506969452, 0.19129660725593567, -0.08920523524284363, 0.083833709359169, -0.030851297080516815, -0.10177867859601974, -0.03813977539539337, 0.09419101476669312, 0.028647251427173615, 0.07010181993246078, -0.11598050594329834, 0.002503975760191679, -0.11337680369615555, 0.05878075957298279, 0.026014933362603188, -0.005663244053721428, 0.0863506942987442, -0.14528369903564453, 0.06752212345600128, 0.09721183776855469, 0.1152491420507431, 0.007956072688102722, -0.16969716548919678, -0.09579262882471085, 0.0800107941031456, -0.015093397349119186, -0.06233064830303192, -0.10064476728439331, -0.011105120182037354, -0.13446874916553497, 0.016898218542337418, 0.06718945503234863, 0.17677530646324158, 0.16284477710723877, 0.06320586800575256, -0.11881421506404877, -0.14939947426319122, -0.1260262429714203, 0.09465927630662918, -0.14318788051605225, -0.026973992586135864, -0.06682690232992172, 0.033995047211647034, 0.04194312542676926, 0.049233000725507736, 0.15815699100494385, -0.06988243758678436, 0.236424058675766, 0.14440298080444336, 0.021967031061649323], "positions": "all"}]
PATCH = None
SWEEP = None
WINDOW = {"max_new_tokens": 4}

if MODEL_ID == "public/models/stories260K" and not os.path.isdir(MODEL_ID):
    sys.exit(f"MODEL_ID = {MODEL_ID!r} is not a folder here: set MODEL_ID (top of this script) to a Hugging Face id or a folder of the model's HF files (config.json, tokenizer.json, model.safetensors)")

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
    cut = min([12] + [i for i in [prefix_text.find("\n")] if i > 0])
    shown = prefix_text[:cut] + "…" if len(prefix_text) > cut else prefix_text
    print(f"decision point after the shared prefix `{shown}`, {K} token{'' if K == 1 else 's'}")
    PROMPT_IDS = PROMPT_IDS + PREFIX_IDS
    GOOD_SEQS, BAD_SEQS = [GOOD_SEQS[0][K:]], [BAD_SEQS[0][K:]]
T = len(PROMPT_IDS)
GOOD_IDS, BAD_IDS = first_ids(GOOD_SEQS), first_ids(BAD_SEQS)
N_GEN = WINDOW["max_new_tokens"] if WINDOW else 0
# Each intervention as (layer, "pre"/"post", alpha * vector, its positions among prompt + generated
# tokens), in the order the forward pass reaches them (nnsight reads modules in execution order).
STEER = sorted(((s["layer"], s["at"], [s["alpha"] * x for x in s["vector"]], positions(s["positions"], T + N_GEN)) for s in STEERING), key=lambda s: (s[0], s[1] != "pre"))
results = {
    "format": "branchpoint-results",
    "version": 1,
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
