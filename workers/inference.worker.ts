/// <reference lib="webworker" />
import * as Comlink from 'comlink';
import { Engine } from './engine/engine';
import { selectBackend } from './engine/backend/select';
import { filesFor } from './sources';
import type { AnalyseRequest, BackendChoice, GenerateRequest, InferenceApi, LoadProgress, ModelSource, PromptInput, TokenEvent } from './protocol';

let engine: Engine | null = null;
let lastAnalysed: AnalyseRequest | null = null;
let abort: AbortController | null = null;

function need(): Engine {
  if (!engine) throw new Error('no model is loaded: pick one first');
  return engine;
}

/** The inference worker: the engine behind Comlink. Errors are rethrown with readable messages. */
const api: InferenceApi = {
  async load(source: ModelSource, backend: BackendChoice, onProgress?: (p: LoadProgress) => void) {
    abort?.abort();
    engine?.dispose();
    engine = null;
    lastAnalysed = null;
    const files = await filesFor(source);
    const be = await selectBackend(backend);
    try {
      engine = await Engine.load(files, be, onProgress);
    } catch (e) {
      be.dispose();
      throw e;
    }
    return engine.info();
  },

  async tokenize(p: PromptInput) {
    const e = need();
    const ids = e.encodePrompt(p);
    return { ids, tokens: e.tokenStrings(ids) };
  },

  async analyse(req: AnalyseRequest) {
    const a = await need().analyse(req);
    lastAnalysed = req;
    return Comlink.transfer(a, [a.lensMargin.buffer, a.finalMargin.buffer, a.lensTopIds.buffer, a.lensTopLogProbs.buffer, a.residNorms.buffer, a.sinks.alpha.buffer, a.sinks.alpha0.buffer]);
  },

  async pattern(layer: number, head: number) {
    const e = need();
    if (!lastAnalysed) throw new Error('analyse a prompt first');
    const ids = e.encodePrompt(lastAnalysed);
    const name = `blocks.${layer}.attn.hook_pattern`;
    const { captured } = await e.run(ids, { capture: [name], interventions: lastAnalysed.interventions });
    const T = ids.length;
    const out = captured.get(name)!.slice(head * T * T, (head + 1) * T * T);
    return Comlink.transfer(out, [out.buffer]);
  },

  async generate(req: GenerateRequest, onToken?: (e: TokenEvent) => void) {
    abort?.abort();
    abort = new AbortController();
    return need().generate(req, onToken, abort.signal);
  },

  cancel() {
    abort?.abort();
  },
};

Comlink.expose(api);
