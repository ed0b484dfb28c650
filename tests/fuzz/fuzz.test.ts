import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { architectureFor, SUPPORTED_MODEL_TYPES } from '../../workers/engine/arch/registry';
import { checkSpec } from '../../workers/engine/model/spec_checks';
import { DTYPE_BYTES, FLOAT_DTYPES, decodeTensor, parseSafetensors } from '../../workers/engine/io/safetensors';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { checkVocabulary, loadTokenizer } from '../../workers/engine/tokenizer';
import { readVectorFile } from '../../workers/engine/steering/vector_io';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { llamaSpec } from '../../workers/engine/arch/llama';
import { json, modelFiles, putText } from '../hardening/model_variants';
import { npy } from '../corpus/inputs';
import { MAX_RENDERED_CHARS, renderChatTemplate } from '../../workers/engine/chat_template';
import { openGguf } from '../../workers/engine/io/gguf';
import { hfToGguf } from '../../tools/gguf_write';
import { sharedPath } from '../shared';

/**
 * Bounded, seeded fuzzing (issue #8) of every parser that reads user files: the safetensors reader,
 * config.json → ModelSpec, tokenizer loading, steering-vector readers, intervention JSON, the GGUF
 * reader (io/gguf.ts) and chat templates (tokenizer_config.json chat_template, rendered under chat_template.ts's limits).
 * Properties, for every generated input:
 * - the reader returns, or throws one of our readable errors — never a raw RangeError, TypeError,
 *   SyntaxError or ReferenceError (those mean an unchecked input reached the JavaScript runtime);
 * - it takes under 1 s of CPU time (process.cpuUsage, so machine load does not flake it);
 * - what it allocates is bounded by the input: decoded tensors are at most 2× their bytes
 *   (F16/BF16 → F32), a ModelSpec's arrays are at most the config's bounds.
 * Reproducible: seed BP_FUZZ_SEED (default 20261130) and the per-target run counts below; a failure
 * prints fast-check's counterexample and path. Turn a failing input into a case in
 * tests/corpus/cases.ts (CASES) with the message it should give, then fix the reader.
 * Budget: ≤ 2 minutes in all (each target stops at its run count or its time limit).
 */
const SEED = Number(process.env.BP_FUZZ_SEED ?? 20261130);
const TIME_LIMIT_MS = 15_000; // per target: 6 targets stay under 2 minutes
const stats: { target: string; runs: number; seconds: number }[] = [];

const RAW_JS_ERRORS = [RangeError, TypeError, SyntaxError, ReferenceError];

/** Rethrows e as a failure unless it is a readable error of ours (not a raw runtime error, not empty). */
function expectReadable(what: string, e: unknown): void {
  if (!(e instanceof Error) || RAW_JS_ERRORS.some((k) => e instanceof k) || e.message.length === 0) {
    throw new Error(`${what}: unexpected ${e instanceof Error ? e.name : typeof e}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Fails when more than 1 s of CPU time went by since t0 (process.cpuUsage()). */
function expectFast(what: string, t0: NodeJS.CpuUsage): void {
  const cpu = process.cpuUsage(t0);
  const ms = (cpu.user + cpu.system) / 1000;
  if (ms > 1000) throw new Error(`${what}: took ${ms.toFixed(0)} ms of CPU time (limit 1000 ms)`);
}

/** Runs f; its result, or undefined when it threw a readable error of ours; rethrows raw runtime errors and slow inputs. */
function guarded<T>(what: string, f: () => T): T | undefined {
  const t0 = process.cpuUsage();
  try {
    return f();
  } catch (e) {
    expectReadable(what, e);
    return undefined;
  } finally {
    expectFast(what, t0);
  }
}

/** guarded for an async f. */
async function guardedAsync<T>(what: string, f: () => Promise<T>): Promise<T | undefined> {
  const t0 = process.cpuUsage();
  try {
    return await f();
  } catch (e) {
    expectReadable(what, e);
    return undefined;
  } finally {
    expectFast(what, t0);
  }
}

function record(target: string, runs: number, t0: number): void {
  stats.push({ target, runs, seconds: (performance.now() - t0) / 1000 });
}

const params = (numRuns: number) => ({ seed: SEED, numRuns, interruptAfterTimeLimit: TIME_LIMIT_MS, markInterruptAsFailure: false });

// ---------------------------------------------------------------- generators

/** Header entries that are mostly plausible and sometimes hostile. */
const dim = fc.oneof(fc.nat(8), fc.integer({ min: -3, max: 2 ** 53 }), fc.constantFrom(2 ** 31, 2 ** 32, 1.5, -0));
const entry = fc.record({
  dtype: fc.oneof(fc.constantFrom(...(Object.keys(DTYPE_BYTES) as string[])), fc.string({ maxLength: 5 })),
  shape: fc.oneof(fc.array(dim, { maxLength: 4 }), fc.anything()),
  data_offsets: fc.oneof(fc.tuple(fc.nat(64), fc.nat(64)), fc.array(fc.integer({ min: -5, max: 2 ** 40 }), { maxLength: 3 }), fc.anything()),
}, { requiredKeys: [] });
const headerObject = fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constant('__metadata__')), fc.oneof(entry, fc.anything()), { maxKeys: 5 });

/** A safetensors file: a JSON (or mangled) header, a length field that is right or wrong, some data bytes. */
const safetensorsFile = fc.tuple(
  fc.oneof(headerObject.map((h) => JSON.stringify(h)), fc.string({ maxLength: 60 }), fc.constant('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}')),
  fc.oneof(fc.constant(-1), fc.nat(200), fc.constantFrom(2 ** 32, 2 ** 53)),
  fc.uint8Array({ maxLength: 96 }),
).map(([h, len, data]) => {
  const hb = new TextEncoder().encode(h);
  const out = new Uint8Array(8 + hb.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(len < 0 ? hb.length : len), true);
  out.set(hb, 8);
  out.set(data, 8 + hb.length);
  return out;
});

const configValue = fc.oneof(
  fc.integer({ min: -4, max: 300 }), fc.constantFrom(0, 2 ** 31, 2 ** 53, 1e308, 0.5, -1e-9, 7, 64, 4096), fc.double(),
  fc.string({ maxLength: 4 }), fc.constant(null), fc.array(fc.nat(10), { maxLength: 3 }), fc.boolean(),
);
const CONFIG_KEYS = ['hidden_size', 'n_embd', 'num_attention_heads', 'n_head', 'num_key_value_heads', 'head_dim', 'num_hidden_layers', 'n_layer',
  'intermediate_size', 'n_inner', 'vocab_size', 'max_position_embeddings', 'n_positions', 'rms_norm_eps', 'layer_norm_eps', 'layer_norm_epsilon',
  'rope_theta', 'partial_rotary_factor', 'rotary_pct', 'sliding_window', 'sliding_window_pattern', 'max_window_layers', 'query_pre_attn_scalar',
  'attn_logit_softcapping', 'final_logit_softcapping', 'bos_token_id', 'eos_token_id', 'hidden_act', 'rope_scaling', 'layer_types', 'tie_word_embeddings', 'torch_dtype'];
/** stories260K's config with some keys replaced by hostile values, under any registered model_type. */
const config = fc.tuple(fc.constantFrom(...SUPPORTED_MODEL_TYPES), fc.dictionary(fc.constantFrom(...CONFIG_KEYS), configValue, { maxKeys: 6 })).map(([type, edits]) => {
  const base = json(modelFiles(), 'config.json');
  return { ...base, n_embd: 64, n_head: 8, n_layer: 5, n_positions: 512, ...edits, model_type: type };
});

// ---------------------------------------------------------------- targets

describe(`fuzz (seed ${SEED})`, () => {
  it('safetensors reader: readable error or a header whose tensors decode within 2× their bytes', () => {
    let runs = 0;
    const t0 = performance.now();
    fc.assert(fc.property(safetensorsFile, (bytes) => {
      runs++;
      const h = guarded('parseSafetensors', () => parseSafetensors(bytes, 'fuzz.safetensors'));
      if (!h) return;
      for (const e of h.tensors.values()) {
        expect(e.end).toBeLessThanOrEqual(bytes.length - h.dataStart);
        if (!FLOAT_DTYPES.includes(e.dtype)) continue;
        const out = guarded('decodeTensor', () => decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype));
        if (out) expect(out.byteLength).toBeLessThanOrEqual(2 * (e.end - e.begin));
      }
    }), params(40_000));
    record('safetensors reader', runs, t0);
  }, 60_000);

  it('config.json → ModelSpec: readable error, or a spec whose sizes are positive whole numbers within the bounds', () => {
    let runs = 0;
    const t0 = performance.now();
    fc.assert(fc.property(config, (c) => {
      runs++;
      const spec = guarded('spec', () => {
        const s = architectureFor(c.model_type).spec(c);
        checkSpec(s);
        return s;
      });
      if (!spec) return;
      for (const k of ['nLayers', 'dModel', 'nHeads', 'nKvHeads', 'dHead', 'dMlp', 'dVocab', 'nCtx'] as const) {
        expect(Number.isInteger(spec[k]) && spec[k] > 0, `${k} = ${spec[k]}`).toBe(true);
      }
      expect(spec.nLayers).toBeLessThanOrEqual(1024);
      expect(spec.windows.length).toBe(spec.nLayers);
      expect(spec.invFreq.length).toBeLessThanOrEqual(spec.dHead / 2);
    }), params(20_000));
    record('config → spec', runs, t0);
  }, 60_000);

  it('tokenizer loading: a mangled tokenizer.json or tokenizer_config.json gives a readable error or a tokenizer that encodes', async () => {
    const base = modelFiles();
    const tok = new TextDecoder().decode(base.get('tokenizer.json')!);
    const spec = llamaSpec(json(base, 'config.json'));
    let runs = 0;
    const t0 = performance.now();
    const mangled = fc.oneof(
      // cut the file short, or splice random text into it
      fc.nat(tok.length).map((n) => ({ file: 'tokenizer.json', text: tok.slice(0, n) })),
      fc.tuple(fc.nat(tok.length), fc.string({ maxLength: 12 })).map(([i, s]) => ({ file: 'tokenizer.json', text: tok.slice(0, i) + s + tok.slice(i) })),
      fc.record({ model: fc.anything(), added_tokens: fc.anything(), decoder: fc.anything() }, { requiredKeys: [] }).map((o) => ({ file: 'tokenizer.json', text: JSON.stringify({ ...JSON.parse(tok), ...o }) })),
      fc.record({ bos_token: fc.anything(), chat_template: fc.anything(), tokenizer_class: fc.anything() }, { requiredKeys: [] }).map((o) => ({ file: 'tokenizer_config.json', text: JSON.stringify(o) })),
    );
    await fc.assert(fc.asyncProperty(mangled, async ({ file, text }) => {
      runs++;
      const files = new MemoryFiles('fuzz', putText(modelFiles(), file, text));
      const t = await guardedAsync('loadTokenizer', () => loadTokenizer(files));
      if (!t) return;
      guarded('encode', () => t.encode('Once upon a time'));
      guarded('checkVocabulary', () => checkVocabulary(t, spec.dVocab, 'fuzz'));
    }), params(300));
    record('tokenizer loading', runs, t0);
  }, 60_000);

  it('vector readers (.npy, .safetensors, .json): readable error or a finite vector no longer than the data allows', () => {
    let runs = 0;
    const t0 = performance.now();
    const npyHeader = fc.record({
      descr: fc.constantFrom("'<f4'", "'<f8'", "'>f4'", "'<i4'", "'|b1'", "'<f2'", '1'),
      order: fc.constantFrom('False', 'True', 'None'),
      shape: fc.oneof(fc.array(fc.oneof(fc.nat(70), fc.constantFrom(2 ** 40, -1)), { maxLength: 3 }).map((a) => `(${a.join(', ')}${a.length === 1 ? ',' : ''})`), fc.string({ maxLength: 6 })),
    }).map((h) => `{'descr': ${h.descr}, 'fortran_order': ${h.order}, 'shape': ${h.shape}, }`);
    const file = fc.oneof(
      fc.tuple(npyHeader, fc.uint8Array({ maxLength: 300 }), fc.constantFrom(1, 2, 3, 4)).map(([h, d, v]) => ({ name: 'v.npy', bytes: npy(h, d, v) })),
      fc.uint8Array({ maxLength: 40 }).map((b) => ({ name: 'v.npy', bytes: Uint8Array.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, ...b]) })),
      safetensorsFile.map((bytes) => ({ name: 'v.safetensors', bytes })),
      fc.oneof(fc.json(), fc.string({ maxLength: 30 }), fc.array(fc.oneof(fc.double(), fc.constant(null), fc.string()), { maxLength: 8 }).map((a) => JSON.stringify({ vector: a, d_model: a.length }))).map((t) => ({ name: 'v.json', bytes: new TextEncoder().encode(t) })),
    );
    fc.assert(fc.property(file, ({ name, bytes }) => {
      runs++;
      const v = guarded(name, () => readVectorFile(name, bytes));
      if (!v) return;
      expect(v.vector.every(Number.isFinite)).toBe(true);
      if (name !== 'v.json') expect(v.vector.length * 2).toBeLessThanOrEqual(bytes.length);
    }), params(20_000));
    record('vector readers', runs, t0);
  }, 60_000);

  it('intervention JSON: readable error or an intervention whose vector fits the hook', () => {
    const spec = llamaSpec(json(modelFiles(), 'config.json'));
    let runs = 0;
    const t0 = performance.now();
    const hooks = fc.oneof(fc.constantFrom('blocks.1.hook_resid_post', 'blocks.0.attn.hook_z', 'blocks.4.mlp.hook_post', 'blocks.9.hook_resid_pre', 'hook_embed', 'blocks.1.attn.hook_pattern', 'logits'), fc.string({ maxLength: 12 }));
    const vec = fc.oneof(fc.array(fc.double({ noNaN: false }), { maxLength: 70 }), fc.constant(new Array(64).fill(0)), fc.constant(new Array(64).fill(0.5)), fc.constant(new Array(172).fill(1)), fc.string({ maxLength: 8 }));
    const iv = fc.oneof(
      fc.record({
        hook: hooks, type: fc.constantFrom('add', 'add_norm_preserving', 'rotate', 'ablate', 'patch', 'sae_clamp', 'x'), vector: fc.oneof(vec, fc.record({ sae: fc.string({ maxLength: 4 }), feature: fc.oneof(fc.integer({ min: -2, max: 300 }), fc.double()) }, { requiredKeys: [] })),
        alpha: fc.oneof(fc.double(), fc.string({ maxLength: 3 })), theta: fc.double(), t: fc.double(), mode: fc.constantFrom('zero', 'mean', 'project', 'q'),
        head: fc.oneof(fc.integer({ min: -2, max: 10 }), fc.double()), positions: fc.oneof(fc.constantFrom('all', 'prompt', 'generated', 'none'), fc.array(fc.integer({ min: -3, max: 20 }), { maxLength: 4 }), fc.record({ start: fc.integer({ min: -2, max: 20 }), end: fc.integer({ min: -2, max: 40 }) })),
        steps: fc.oneof(fc.record({ start: fc.integer({ min: -2, max: 9 }), end: fc.integer({ min: -2, max: 9 }) }), fc.anything()),
        source: fc.string({ maxLength: 5 }),
        sae: fc.string({ maxLength: 4 }), feature: fc.oneof(fc.integer({ min: -2, max: 300 }), fc.double()), value: fc.oneof(fc.double(), fc.string({ maxLength: 3 })),
      }, { requiredKeys: [] }),
      fc.anything(),
    );
    fc.assert(fc.property(iv, fc.integer({ min: 1, max: 12 }), fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }), (j, nPrompt, maxNewTokens) => {
      runs++;
      const out = guarded('intervention', () => toIntervention(parseSpec(j), spec, { nPrompt, maxNewTokens }));
      if (!out || out.op.kind === 'patch' || out.op.kind === 'sae_clamp') return; // an SAE reference never resolves here (no saeOf)
      const width = out.groups ? out.groups.size : out.hook.includes('mlp') ? spec.dMlp : out.hook.includes('hook_z') ? spec.nHeads * spec.dHead : spec.dModel;
      expect(out.op.v.length).toBe(width);
      expect(out.op.v.every(Number.isFinite)).toBe(true);
    }), params(20_000));
    record('intervention JSON', runs, t0);
  }, 60_000);
});

describe(`fuzz chat templates (seed ${SEED})`, () => {
  it('chat templates: a bounded render (within 1 s of CPU, at most MAX_RENDERED_CHARS) or an error naming chat_template', () => {
    let runs = 0;
    const t0 = performance.now();
    const num = fc.oneof(fc.nat(12), fc.constantFrom(300, 9999, 10_000, 10_001, 99_999, 1e9));
    const expr = fc.oneof(fc.constantFrom("messages[0]['content']", 'bos_token', "'ab' * 3", 'ns.s', 'ns.s | length', 'undefined_name', 'messages | length', "range(3) | join('-')"), num.map(String), fc.string({ maxLength: 6 }).map((t) => JSON.stringify(t)));
    const { block } = fc.letrec<{ block: string }>((tie) => ({
      block: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        expr.map((e) => `{{ ${e} }}`),
        fc.string({ maxLength: 10 }),
        fc.constantFrom('{% set ns.s = ns.s + ns.s %}', "{{ raise_exception('no') }}", '{% if %}', '{% for %}', '{{', '{% endfor %}', '{{ messages.count() }}'),
        fc.tuple(num, tie('block')).map(([n, b]) => `{% for i in range(${n}) %}${b}{% endfor %}`),
        fc.tuple(num, tie('block')).map(([n, b]) => `{% set k = ${n} %}{% for j in range(k * k) %}${b}{% endfor %}`),
        fc.tuple(fc.string({ maxLength: 4 }), tie('block')).map(([name, b]) => `{% macro m${name.replace(/\W/g, '')}(x) %}${b}{% endmacro %}{{ m${name.replace(/\W/g, '')}(1) }}`),
        fc.tuple(tie('block'), tie('block')).map(([a, b]) => a + b),
      ),
    }));
    const template = block.map((b) => `{% set ns = namespace(s='xy') %}${b}`);
    const items = { messages: [{ role: 'user', content: 'hi' }], add_generation_prompt: true, bos_token: '<s>', eos_token: '</s>' };
    fc.assert(fc.property(template, (t) => {
      runs++;
      try {
        const out = guarded('chat template', () => renderChatTemplate(t, items));
        if (out !== undefined) expect(out.length).toBeLessThanOrEqual(MAX_RENDERED_CHARS);
      } catch (e) {
        throw new Error(`${(e as Error).message}\ntemplate: ${t}`);
      }
      return true;
    }), params(3_000));
    record('chat templates', runs, t0);
  }, 60_000);

  it('GGUF reader: a mutated or cut model.gguf gives a readable error, or tensors that all lie inside the file and read', async () => {
    const base = hfToGguf(sharedPath('fixtures', 'llama-tiny'), 'q4_0');
    // byte edits in the header (metadata and tensor infos: the first ~2 KiB) and cuts anywhere
    const mutated = fc.tuple(fc.array(fc.tuple(fc.nat(2047), fc.nat(255)), { minLength: 1, maxLength: 4 }), fc.option(fc.nat(base.length), { freq: 3 })).map(([edits, cut]) => {
      const b = base.slice(0, cut ?? base.length);
      for (const [i, v] of edits) if (i < b.length) b[i] = v;
      return b;
    });
    let runs = 0;
    const t0 = performance.now();
    await fc.assert(fc.asyncProperty(mutated, async (bytes) => {
      runs++;
      const g = await guardedAsync('openGguf', () => openGguf(new MemoryFiles('fuzz', new Map([['model.gguf', bytes]]))));
      if (!g) return;
      for (const name of g.source.names()) {
        guarded('GGUF tensor', () => g.source.quant?.(name) ?? g.source.get(name));
      }
    }), params(300));
    record('GGUF reader', runs, t0);
  }, 90_000);
});

afterAll(() => {
  const total = stats.reduce((s, x) => s + x.runs, 0), secs = stats.reduce((s, x) => s + x.seconds, 0);
  for (const s of stats) console.log(`fuzz ${s.target}: ${s.runs} inputs in ${s.seconds.toFixed(1)} s (${(s.runs / s.seconds).toFixed(0)}/s)`);
  console.log(`fuzz total: ${total} inputs in ${secs.toFixed(1)} s (seed ${SEED})`);
});
