/// <reference lib="webworker" />
import * as Comlink from 'comlink';
import { Engine } from './engine/engine';
import { selectBackend } from './engine/backend/select';
import { deleteCachedModel, listCachedModels } from './engine/io/cache';
import { deviceLimits, filesFor } from './sources';
import type { AnalyseRequest, BackendChoice, GenerateRequest, InferenceApi, LoadOptions, LoadProgress, ModelSource, PromptInput, TokenEvent } from './protocol';

let engine: Engine | null = null;
let lastAnalysed: AnalyseRequest | null = null;
let abort: AbortController | null = null;
let loading: AbortController | null = null;

function need(): Engine {
  if (!engine) throw new Error('no model is loaded: pick one first');
  return engine;
}

/** The inference worker: the engine behind Comlink. Errors are rethrown with readable messages. */
const api: InferenceApi = {
  async load(source: ModelSource, backend: BackendChoice, onProgress?: (p: LoadProgress) => void, options: LoadOptions = {}) {
    abort?.abort();
    loading?.abort();
    const ctrl = new AbortController();
    loading = ctrl;
    engine?.dispose();
    engine = null;
    lastAnalysed = null;
    const be = await selectBackend(backend);
    try {
      const limits = options.checkFit === false ? undefined : deviceLimits(be, options.memoryBudgetBytes);
      const files = await filesFor(source, { limits, signal: ctrl.signal });
      engine = await Engine.load(files, be, onProgress);
    } catch (e) {
      be.dispose();
      throw e;
    } finally {
      if (loading === ctrl) loading = null;
    }
    return engine.info();
  },

  async tokenize(p: PromptInput) {
    const e = need();
    const ids = e.encodePrompt(p);
    return { ids, tokens: e.tokenStrings(ids) };
  },

  async tokenStrings(ids: number[]) {
    const e = need();
    const prefix = lastAnalysed ? e.encodePrompt(lastAnalysed).slice(0, 1) : [];
    return ids.map((id) => e.tokenStrings([id], prefix)[0]);
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
    loading?.abort();
  },

  cachedModels: () => listCachedModels(),

  deleteCachedModel: (repo: string, revision: string, endpoint?: string) => deleteCachedModel(repo, revision, endpoint),
};

Comlink.expose(api);
