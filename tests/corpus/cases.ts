/**
 * The bad-input corpus (issue #8): every case states the input, what is wrong with it, and the
 * expected outcome — a refusal naming the culprit, or a specific result. To add cases (SAE files,
 * experiment files, a failing fuzz input), append entries to CASES; `ui: true` also runs a case
 * through the browser (keep those to about a third).
 */
import type { Analysis, Generation } from '../../workers/engine/api';
import { ggufFolder, replaceAscii, setMeta, setTensorOffset, setTensorType } from './gguf_bytes';
import { json, modelFiles, putJson, putText, tensorsOf, withConfig, withTensors } from '../hardening/model_variants';
import { encodeSafetensors } from '../../tools/safetensors_write';
import { f32bytes, npy, oneTensor, rawSafetensors, stVector, text, type BadInputCase } from './inputs';
import { zipSync } from 'fflate';
import type { SaeConfig } from '../../workers/engine/sae/config';
import { cfgWith, npzFromSafetensors, SAE_DIRS, saeFileMap, weightsWith } from '../sae/sae_files';

const V64 = Array.from({ length: 64 }, (_, i) => Math.cos(i) / 4);
const ZERO64 = new Array<number>(64).fill(0);
const ONES64 = new Array<number>(64).fill(1);
const HOOK = 'blocks.2.hook_resid_post';

/** A chat template (Llama-2 style) for stories260K's tokenizer, which ships none. */
const CHAT = "{% for m in messages %}{{ bos_token }}[INST] {{ m['content'] }} [/INST]{% endfor %}";
const withChat = (template = CHAT) => {
  const f = modelFiles();
  return putJson(f, 'tokenizer_config.json', { ...json(f, 'tokenizer_config.json'), chat_template: template });
};

/** stories260K split into two shards with an index whose weight_map is `edit`ed. */
function sharded(edit: (wm: Record<string, string>) => Record<string, string> | unknown = (wm) => wm): Map<string, Uint8Array> {
  const f = modelFiles();
  const ts = tensorsOf(f);
  const half = Math.ceil(ts.length / 2);
  const a = ts.slice(0, half), b = ts.slice(half);
  f.delete('model.safetensors');
  f.set('model-00001-of-00002.safetensors', encodeSafetensors(a));
  f.set('model-00002-of-00002.safetensors', encodeSafetensors(b));
  const wm: Record<string, string> = {};
  for (const t of a) wm[t.name] = 'model-00001-of-00002.safetensors';
  for (const t of b) wm[t.name] = 'model-00002-of-00002.safetensors';
  return putJson(f, 'model.safetensors.index.json', { metadata: {}, weight_map: edit(wm) ?? wm });
}

/** The shared JumpReLU SAE (SAELens folder + params.npz, ../shared/saes) with files replaced (null removes one). */
const JR = SAE_DIRS.jumprelu;
const saeCase = (id: string, what: string, changes: Record<string, Uint8Array | string | null>, error: RegExp, opts: { path?: string; hook?: string } = {}): BadInputCase =>
  ({ id: `sae/${id}`, what, input: () => ({ kind: 'sae', files: saeFileMap(JR, changes), ...opts }), expect: { error } });
const zeros = (shape: number[]) => ({ data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape });
/** Only a params.npz (no SAELens files), optionally with a cfg.json beside it. */
const npzOnly = (npz: Uint8Array | string, keepCfg = false) => ({ 'sae_weights.safetensors': null, 'cfg.sae_lens_v6.json': null, ...(keepCfg ? {} : { 'cfg.json': null }), 'params.npz': npz });
const isSaeCfg = (r: unknown): r is SaeConfig => typeof r === 'object' && r !== null && 'dSae' in r;

/** A valid experiment file (stories260K, one vector) with `edit` applied to its object, as text. */
const EXP_BASE = () => ({
  format: 'branchpoint-experiment', version: 2, model: { kind: 'bundled', name: 'stories260K' }, prompt: 'Once upon a time', chatTemplate: false,
  good: { mode: 'text', value: ' there' }, bad: { mode: 'text', value: ' a' },
  vectors: [{ name: 'v', hook: HOOK, model: 'stories260K', dModel: 64, provenance: { method: 'file', position: 'last', positive: [], negative: [] }, values: V64 }],
});
const expText = (edit: (e: Record<string, unknown>) => void = () => {}) => { const e: Record<string, unknown> = EXP_BASE(); edit(e); return JSON.stringify(e); };
/** The experiment's JSON text with `"key": value` written a second time just after its opening brace (JSON.parse keeps the last). */
const dupExp = (key: string, value: unknown) => expText().replace(/^\{/, `{${JSON.stringify(key)}:${JSON.stringify(value)},`);
const MARGINS_EXP = ['margins', '--experiment', 'EXPERIMENT'];
/** `text` saved as UTF-16 LE with a byte-order mark, then read as UTF-8 (what fs.readFileSync(…, 'utf8') and File.text() do). */
const asUtf16 = (text: string, bom = true) => new TextDecoder().decode(new Uint8Array([...(bom ? [0xff, 0xfe] : []), ...new Uint8Array(Buffer.from(text, 'utf16le'))]));
const TEN_MB = 'a'.repeat(10_000_000);
const isObj = (r: unknown): r is Record<string, unknown> => typeof r === 'object' && r !== null;
const ggufMeta = (key: string, v: number) => ggufFolder((b) => setMeta(b, key, v));
/** Deb822 and one-line apt sources as a Debian 12 machine has them (the mirror host a placeholder). */
const DEB822 = 'Types: deb\n# a comment\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n';

const isAnalysis = (r: unknown): r is Analysis => typeof r === 'object' && r !== null && 'lensMargin' in r;
const finiteAnalysis = (r: unknown) => isAnalysis(r) && Number.isFinite(r.sequenceMargin) && Array.from(r.lensMargin).every(Number.isFinite);

const cfg = (id: string, what: string, edit: (c: Record<string, unknown>) => void, error: RegExp, ui = true): BadInputCase =>
  ({ id: `config/${id}`, what, input: () => ({ kind: 'model', files: withConfig(edit) }), expect: { error }, ui });

export const CASES: BadInputCase[] = [
  // ------------------------------------------------------------------ config.json
  cfg('layers-2^31', 'num_hidden_layers = 2^31 (used to hang the CLI for a minute)', (c) => { c.num_hidden_layers = 2 ** 31; }, /config\.json "num_hidden_layers" is 2147483648; expected a whole number in \[1, 1024\]/, true),
  cfg('head-dim-2^31', 'head_dim = 2^31', (c) => { c.head_dim = 2 ** 31; }, /"head_dim" is 2147483648; expected a whole number in \[1, 16384\]/),
  cfg('layers-0', 'num_hidden_layers = 0', (c) => { c.num_hidden_layers = 0; }, /"num_hidden_layers" is 0; expected a whole number in \[1, 1024\]/),
  cfg('layers-negative', 'num_hidden_layers = -3', (c) => { c.num_hidden_layers = -3; }, /"num_hidden_layers" is -3/),
  cfg('layers-fraction', 'num_hidden_layers = 4.5', (c) => { c.num_hidden_layers = 4.5; }, /"num_hidden_layers" is 4\.5; expected a whole number/),
  cfg('layers-string', 'hidden_size given as the string "64"', (c) => { c.hidden_size = '64'; }, /config\.json "hidden_size" is "64" \(a string\); expected a number/, true),
  cfg('layers-more-than-checkpoint', 'num_hidden_layers 6, checkpoint has 5 blocks', (c) => { c.num_hidden_layers = 6; }, /config\.json gives 6 layers .* checkpoint holds blocks 0\.\.4 \(5 layers\)/),
  cfg('layers-fewer-than-checkpoint', 'num_hidden_layers 3, checkpoint has 5 blocks', (c) => { c.num_hidden_layers = 3; }, /config\.json gives 3 layers .* \(5 layers\)/),
  cfg('heads-not-dividing', 'hidden_size 64 with 7 heads and no head_dim', (c) => { c.num_attention_heads = 7; delete c.head_dim; }, /"hidden_size" 64 is not divisible by "num_attention_heads" 7/, true),
  cfg('kv-heads-not-dividing', 'num_key_value_heads 3 for 8 query heads', (c) => { c.num_key_value_heads = 3; }, /"num_attention_heads" 8 is not a multiple of "num_key_value_heads" 3/),
  cfg('max-pos-0', 'max_position_embeddings = 0', (c) => { c.max_position_embeddings = 0; }, /"max_position_embeddings" is 0; expected a whole number in \[1, 16777216\]/),
  cfg('vocab-huge', 'vocab_size = 1e12', (c) => { c.vocab_size = 1e12; }, /"vocab_size" is 1000000000000; expected a whole number in \[1, 4194304\]/),
  cfg('vocab-mismatch', 'vocab_size 600 but the embedding has 512 rows', (c) => { c.vocab_size = 600; }, /model\.embed_tokens\.weight" has shape \[512,64\], config\.json implies \[600,64\]/),
  cfg('eps-negative', 'rms_norm_eps = -1', (c) => { c.rms_norm_eps = -1; }, /"rms_norm_eps" is -1; expected a number in \[>0, 1\]/),
  cfg('rope-theta-0', 'rope_theta = 0', (c) => { c.rope_theta = 0; }, /"rope_theta" is 0/),
  cfg('rope-type-unknown', 'rope_scaling type "yarn2"', (c) => { c.rope_scaling = { rope_type: 'yarn2', factor: 2 }; }, /rope_scaling type "yarn2" is not supported/),
  cfg('model-type-unknown', 'model_type "mamba"', (c) => { c.model_type = 'mamba'; }, /mamba/),
  cfg('activation-unknown', 'hidden_act "swishglu"', (c) => { c.hidden_act = 'swishglu'; }, /activation "swishglu" is not supported/),
  cfg('intermediate-list', 'intermediate_size given as a list', (c) => { c.intermediate_size = [172]; }, /"intermediate_size" is \[172\] \(a list\); expected a number/),
  cfg('bos-outside-vocab', 'bos_token_id 9999 for a 512-token vocabulary', (c) => { c.bos_token_id = 9999; }, /"bos_token_id" 9999 is outside the vocabulary \[0, 512\)/),
  cfg('head-dim-odd-rotary', 'head_dim 7 (rotary needs an even width)', (c) => { c.head_dim = 7; }, /rotary dimensions .* are 7; expected an even whole number/),
  cfg('missing-hidden-size', 'hidden_size absent', (c) => { delete c.hidden_size; }, /config\.json is missing "hidden_size"/),
  { id: 'config/not-json', what: 'config.json is not JSON (and its bytes are not echoed)', input: () => ({ kind: 'model', files: putText(modelFiles(), 'config.json', 'root:x:0:0:root:/root:/bin/bash') }), expect: { error: /config\.json is not valid JSON(?![\s\S]*root:x)/ }, ui: true },
  { id: 'config/missing', what: 'no config.json', input: () => { const f = modelFiles(); f.delete('config.json'); return { kind: 'model', files: f }; }, expect: { error: /config\.json is missing/ }, ui: true },

  // ------------------------------------------------------------------ safetensors headers and data
  { id: 'safetensors/duplicate-name', what: 'the header names one tensor twice (JSON.parse keeps the last)', input: () => ({ kind: 'safetensors', bytes: rawSafetensors('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', 8) }), expect: { error: /header names tensor "w" twice/ } },
  { id: 'safetensors/duplicate-in-model', what: 'a model file whose header names model.norm.weight twice', input: () => {
    const f = modelFiles();
    const b = f.get('model.safetensors')!;
    const n = Number(new DataView(b.buffer, b.byteOffset).getBigUint64(0, true));
    const head = new TextDecoder().decode(b.subarray(8, 8 + n)).trimEnd();
    const entry = /"model\.norm\.weight":\{[^}]*\}/.exec(head)![0];
    const dup = head.slice(0, -1) + ',' + entry + '}';
    const out = new Uint8Array(8 + dup.length + (b.length - 8 - n));
    new DataView(out.buffer).setBigUint64(0, BigInt(dup.length), true);
    out.set(text(dup), 8);
    out.set(b.subarray(8 + n), 8 + dup.length);
    return { kind: 'model', files: f.set('model.safetensors', out) };
  }, expect: { error: /model\.safetensors: header names tensor "model\.norm\.weight" twice/ }, ui: true },
  { id: 'safetensors/empty-file', what: 'a 0-byte file', input: () => ({ kind: 'safetensors', bytes: new Uint8Array(0) }), expect: { error: /file is 0 bytes, too short/ } },
  { id: 'safetensors/short-length', what: '5 bytes', input: () => ({ kind: 'safetensors', bytes: new Uint8Array(5) }), expect: { error: /file is 5 bytes, too short to hold the 8-byte header length/ } },
  { id: 'safetensors/huge-length', what: 'header length 2^60', input: () => ({ kind: 'safetensors', bytes: rawSafetensors('{}', 0, 2n ** 60n) }), expect: { error: /header length \d+ is outside \[2, 100000000\]/ } },
  { id: 'safetensors/length-past-end', what: 'header length beyond the file', input: () => ({ kind: 'safetensors', bytes: rawSafetensors('{}', 0, 500n) }), expect: { error: /header claims 500 bytes but the file has only 2/ } },
  { id: 'safetensors/not-json', what: 'header is text from another file (not echoed)', input: () => ({ kind: 'safetensors', bytes: rawSafetensors('root:x:0:0:secret') }), expect: { error: /header is not valid JSON(?![\s\S]*secret)/ } },
  { id: 'safetensors/not-utf8', what: 'header bytes are not UTF-8', input: () => { const b = rawSafetensors('{"a":1}'); b[9] = 0xff; return { kind: 'safetensors', bytes: b }; }, expect: { error: /header is not valid UTF-8/ } },
  { id: 'safetensors/array-header', what: 'header is a JSON array', input: () => ({ kind: 'safetensors', bytes: rawSafetensors('[1,2]') }), expect: { error: /header is not a JSON object/ } },
  { id: 'safetensors/bad-dtype', what: 'dtype "F128"', input: () => ({ kind: 'safetensors', bytes: oneTensor({ dtype: 'F128', shape: [1], data_offsets: [0, 4] }, 4) }), expect: { error: /tensor "w": dtype "F128" is not a safetensors dtype/ } },
  { id: 'safetensors/negative-shape', what: 'shape [-1]', input: () => ({ kind: 'safetensors', bytes: oneTensor({ dtype: 'F32', shape: [-1], data_offsets: [0, 4] }, 4) }), expect: { error: /tensor "w": shape \[-1\] is not a list of non-negative integers/ } },
  { id: 'safetensors/float-shape', what: 'shape [1.5]', input: () => ({ kind: 'safetensors', bytes: oneTensor({ dtype: 'F32', shape: [1.5], data_offsets: [0, 4] }, 4) }), expect: { error: /shape \[1\.5\] is not a list/ } },
  { id: 'safetensors/offsets-reversed', what: 'data_offsets [8, 4]', input: () => ({ kind: 'safetensors', bytes: oneTensor({ dtype: 'F32', shape: [1], data_offsets: [8, 4] }, 8) }), expect: { error: /data_offsets end 4 < begin 8/ } },
  { id: 'safetensors/offsets-past-end', what: 'data_offsets beyond the data', input: () => ({ kind: 'safetensors', bytes: oneTensor({ dtype: 'F32', shape: [4], data_offsets: [0, 16] }, 8) }), expect: { error: /data_offsets \[0, 16\] run past the end of the data \(8 bytes/ } },
  { id: 'safetensors/size-mismatch', what: 'shape [3] F32 over 8 bytes', input: () => ({ kind: 'safetensors', bytes: oneTensor({ dtype: 'F32', shape: [3], data_offsets: [0, 8] }, 8) }), expect: { error: /shape \[3\] × F32 needs 12 bytes but data_offsets span 8/ } },
  { id: 'safetensors/overlap', what: 'two tensors share bytes', input: () => ({ kind: 'safetensors', bytes: rawSafetensors('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', 12) }), expect: { error: /tensors "a" and "b" overlap/ } },
  { id: 'safetensors/metadata-not-strings', what: '__metadata__ with a number value', input: () => ({ kind: 'safetensors', bytes: rawSafetensors('{"__metadata__":{"format":1}}') }), expect: { error: /__metadata__ is not an object of strings/ } },
  { id: 'safetensors/empty-name', what: 'a tensor named ""', input: () => ({ kind: 'safetensors', bytes: oneTensor({}, 0).length ? rawSafetensors('{"":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}') : new Uint8Array() }), expect: { error: /tensor with an empty name/ } },
  { id: 'weights/int-dtype', what: 'a weight stored as I32 (names tensor and file)', input: () => ({ kind: 'model', files: withTensors((ts) => { ts.find((t) => t.name === 'model.norm.weight')!.dtype = 'I32' as never; }) }), expect: { error: /model\.safetensors: tensor "model\.norm\.weight": dtype I32 cannot be read as float weights/ }, ui: true },
  { id: 'weights/nan', what: 'a NaN in model.layers.3.mlp.up_proj.weight', input: () => ({ kind: 'model', files: withTensors((ts) => { ts.find((t) => t.name === 'model.layers.3.mlp.up_proj.weight')!.data[11] = NaN; }) }), expect: { error: /tensor "model\.layers\.3\.mlp\.up_proj\.weight" holds NaN at index 11/ }, ui: true },
  { id: 'weights/inf', what: '+Inf in the embedding', input: () => ({ kind: 'model', files: withTensors((ts) => { ts[0].data[100] = Infinity; }) }), expect: { error: /"model\.embed_tokens\.weight" holds Infinity at index 100/ }, ui: true },
  { id: 'weights/f16-overflow', what: '70000 in a matrix loaded as f16', input: () => ({ kind: 'model', files: withTensors((ts) => { ts.find((t) => t.name === 'model.layers.1.self_attn.o_proj.weight')!.data[2] = -70000; }), options: { weightDtype: 'f16' } }), expect: { error: /"model\.layers\.1\.self_attn\.o_proj\.weight" holds -70000 at index 2, beyond the binary16 range ±65504/ } }, // not through the UI: the browser picks its own weight storage
  { id: 'weights/overflowing-activation', what: 'finite weights of 3e38 make blocks.1.hook_mlp_out overflow', input: () => ({ kind: 'model', files: withTensors((ts) => { ts.find((t) => t.name === 'model.layers.1.mlp.down_proj.weight')!.data.fill(3e38); }) }), expect: { error: /not finite: the first non-finite value \(-?Infinity|NaN\) appears at blocks\.1\.hook_mlp_out \(layer 1\), position 0/ }, ui: true },
  { id: 'weights/missing-tensor', what: 'model.norm.weight absent', input: () => ({ kind: 'model', files: withTensors((ts) => ts.filter((t) => t.name !== 'model.norm.weight')) }), expect: { error: /no tensor "model\.norm\.weight"/ }, ui: true },
  { id: 'weights/wrong-shape', what: 'q_proj of layer 0 transposed', input: () => ({ kind: 'model', files: withTensors((ts) => { const t = ts.find((x) => x.name === 'model.layers.0.self_attn.k_proj.weight')!; t.shape = [64, 32]; }) }), expect: { error: /"model\.layers\.0\.self_attn\.k_proj\.weight" has shape \[64,32\], config\.json implies \[32,64\]/ }, ui: true },
  { id: 'weights/extra-tensor', what: 'an unused tensor in the checkpoint', input: () => ({ kind: 'model', files: withTensors((ts) => [...ts, { name: 'model.extra.weight', shape: [2], dtype: 'F32', data: new Float32Array(2) }]) }), expect: { error: /model\.extra\.weight/ }, ui: true },
  { id: 'weights/no-checkpoint', what: 'no safetensors file (pickle only)', input: () => { const f = modelFiles(); f.delete('model.safetensors'); f.set('pytorch_model.bin', new Uint8Array(4)); return { kind: 'model', files: f }; }, expect: { error: /no model\.safetensors or model\.safetensors\.index\.json/ }, ui: true },
  { id: 'weights/truncated', what: 'model.safetensors cut in half', input: () => { const f = modelFiles(); const b = f.get('model.safetensors')!; return { kind: 'model', files: f.set('model.safetensors', b.subarray(0, b.length >> 1)) }; }, expect: { error: /model\.safetensors: tensor ".*": data_offsets .* run past the end of the data/ }, ui: true },
  { id: 'gguf/loads', what: 'stories260K as a Q8_0 GGUF file with its tokenizer (no config.json)', input: () => ({ kind: 'model', files: ggufFolder() }), expect: { ok: 'a finite analysis', check: finiteAnalysis } },
  { id: 'gguf/wrong-magic', what: 'model.gguf not starting with "GGUF"', input: () => ({ kind: 'model', files: ggufFolder((b) => replaceAscii(b, 'GGUF', 'GGML')) }), expect: { error: /model\.gguf: not a readable GGUF file \(not a valid gguf file: not starting with GGUF magic number\)/ } },
  { id: 'gguf/truncated-header', what: 'model.gguf cut inside its metadata', input: () => ({ kind: 'model', files: ggufFolder((b) => b.slice(0, 200)) }), expect: { error: /model\.gguf: the header runs past the end of the file \(200 bytes; truncated\?\)/ } },
  { id: 'gguf/truncated-data', what: 'model.gguf cut in half', input: () => ({ kind: 'model', files: ggufFolder((b) => b.slice(0, b.length >> 1)) }), expect: { error: /model\.gguf: tensor "[\w.]+" spans bytes \[\d+, \d+\) of the data section, which has \d+ bytes \(truncated file or an offset out of range\)/ } },
  { id: 'gguf/unknown-type', what: 'a tensor of type Q4_K (12)', input: () => ({ kind: 'model', files: ggufFolder((b) => setTensorType(b, 'blk.1.ffn_up.weight', 12)) }), expect: { error: /tensor "blk\.1\.ffn_up\.weight" is Q4_K: only F32, F16, Q8_0 and Q4_0 tensors are read/ } },
  { id: 'gguf/bad-type-number', what: 'a tensor type number GGML does not define (999)', input: () => ({ kind: 'model', files: ggufFolder((b) => setTensorType(b, 'output_norm.weight', 999)) }), expect: { error: /tensor "output_norm\.weight" is type 999: only F32, F16, Q8_0 and Q4_0/ } },
  { id: 'gguf/offset-out-of-range', what: 'a tensor offset of 2^40', input: () => ({ kind: 'model', files: ggufFolder((b) => setTensorOffset(b, 'blk.0.attn_q.weight', 2n ** 40n)) }), expect: { error: /tensor "blk\.0\.attn_q\.weight" spans bytes \[1099511627776, \d+\) of the data section/ } },
  { id: 'gguf/architecture', what: 'general.architecture "gpt2x"', input: () => ({ kind: 'model', files: ggufFolder((b) => replaceAscii(b, 'llama', 'gpt2x')) }), expect: { error: /general\.architecture is "gpt2x": only "llama", "qwen3", "gemma2", "gemma3" GGUF files are imported/ } },

  // ------------------------------------------------------------------ sharded indexes
  { id: 'index/ok', what: 'a well-formed two-shard checkpoint (control case)', input: () => ({ kind: 'model', files: sharded() }), expect: { ok: 'loads and analyses with finite margins', check: finiteAnalysis } },
  { id: 'index/dotdot-shard', what: 'weight_map shard "../secret.safetensors"', input: () => ({ kind: 'model', files: sharded((wm) => ({ ...wm, 'model.norm.weight': '../secret.safetensors' })) }), expect: { error: /weight_map\["model\.norm\.weight"\] "\.\.\/secret\.safetensors" has a "\.\." path segment/ }, ui: true },
  { id: 'index/absolute-shard', what: 'weight_map shard "/etc/passwd"', input: () => ({ kind: 'model', files: sharded((wm) => ({ ...wm, 'model.norm.weight': '/etc/passwd' })) }), expect: { error: /"\/etc\/passwd" is an absolute path/ }, ui: true },
  { id: 'index/backslash-shard', what: 'weight_map shard "..\\\\x"', input: () => ({ kind: 'model', files: sharded((wm) => ({ ...wm, 'model.norm.weight': '..\\x.safetensors' })) }), expect: { error: /holds a backslash/ }, ui: true },
  { id: 'index/drive-shard', what: 'weight_map shard "C:x"', input: () => ({ kind: 'model', files: sharded((wm) => ({ ...wm, 'model.norm.weight': 'C:x.safetensors' })) }), expect: { error: /holds ':'/ }, ui: true },
  { id: 'index/dot-shard', what: 'weight_map shard "./model-00001-of-00002.safetensors"', input: () => ({ kind: 'model', files: sharded((wm) => ({ ...wm, 'model.norm.weight': './model-00001-of-00002.safetensors' })) }), expect: { error: /has a "\." path segment/ }, ui: true },
  { id: 'index/empty', what: 'weight_map {}', input: () => ({ kind: 'model', files: sharded(() => ({})) }), expect: { error: /"weight_map" is empty/ }, ui: true },
  { id: 'index/missing-map', what: 'index without weight_map', input: () => { const f = sharded(); return { kind: 'model', files: putJson(f, 'model.safetensors.index.json', { metadata: {} }) }; }, expect: { error: /has no "weight_map" object/ }, ui: true },
  { id: 'index/number-shard', what: 'weight_map value 3', input: () => ({ kind: 'model', files: sharded((wm) => ({ ...wm, 'model.norm.weight': 3 })) }), expect: { error: /weight_map\["model\.norm\.weight"\] is 3; expected a shard file name/ }, ui: true },
  { id: 'index/wrong-shard', what: 'index names the wrong shard for a tensor', input: () => ({ kind: 'model', files: sharded((wm) => ({ ...wm, 'model.embed_tokens.weight': 'model-00002-of-00002.safetensors' })) }), expect: { error: /index says "model\.embed_tokens\.weight" is in model-00002-of-00002\.safetensors, but it is not there/ }, ui: true },
  { id: 'index/missing-shard', what: 'index names a shard that is absent', input: () => { const f = sharded(); f.delete('model-00002-of-00002.safetensors'); return { kind: 'model', files: f }; }, expect: { error: /model-00002-of-00002\.safetensors is missing/ }, ui: true },
  { id: 'index/not-json', what: 'index is not JSON', input: () => ({ kind: 'model', files: putText(sharded(), 'model.safetensors.index.json', '{weight_map: nope') }), expect: { error: /model\.safetensors\.index\.json is not valid JSON \(line 1, column 2\)/ }, ui: true },

  // ------------------------------------------------------------------ tokenizer files
  { id: 'tokenizer/missing', what: 'no tokenizer.json', input: () => { const f = modelFiles(); f.delete('tokenizer.json'); return { kind: 'model', files: f }; }, expect: { error: /tokenizer\.json is missing/ }, ui: true },
  { id: 'tokenizer/not-json', what: 'tokenizer.json is not JSON', input: () => ({ kind: 'model', files: putText(modelFiles(), 'tokenizer.json', 'not json') }), expect: { error: /could not build the tokenizer/ }, ui: true },
  { id: 'tokenizer/small-vocab', what: 'tokenizer of 259 tokens for a 512-row embedding', input: () => {
    const f = modelFiles();
    const t = json(f, 'tokenizer.json') as { model: { vocab: Record<string, number>; merges: unknown[] } };
    t.model.vocab = Object.fromEntries(Object.entries(t.model.vocab).filter(([, id]) => id < 259));
    t.model.merges = [];
    return { kind: 'model', files: putJson(f, 'tokenizer.json', t) };
  }, expect: { ok: 'loads with a warning naming 259 tokens vs 512 rows', check: (r) => isAnalysis(r) && (r.warnings ?? []).some((w) => /tokenizer\.json has 259 tokens but the embedding matrix has 512 rows/.test(w)) } },
  { id: 'tokenizer/id-beyond-embedding', what: 'tokenizer with an id 600 for a 512-row embedding', input: () => {
    const f = modelFiles();
    const t = json(f, 'tokenizer.json') as { model: { vocab: Record<string, number> } };
    t.model.vocab['zzz_extra'] = 600;
    return { kind: 'model', files: putJson(f, 'tokenizer.json', t) };
  }, expect: { error: /tokenizer\.json has token id 600, but the embedding matrix has 512 rows/ }, ui: true },
  { id: 'tokenizer/chat-template-loop', what: 'a chat template looping over range(10**9)', input: () => ({ kind: 'model', files: withChat('{% for i in range(1000000000) %}x{% endfor %}') }), expect: { ok: 'loads (the template only runs when the toggle is on)', check: finiteAnalysis } },
  { id: 'prompt/chat-template-loop', what: 'analyse with the chat-template toggle on a template looping 10^9 times', input: () => ({ kind: 'cli', argv: ['margins', '--model', 'FOLDER', '--prompt', 'hi', '--good', ' a', '--bad', ' b', '--chat-template', 'true'], folder: withChat('{% for i in range(1000000000) %}x{% endfor %}') }), expect: { error: /chat_template loops over range\(1000000000\)/ } },

  { id: 'prompt/chat-template-nested-loops', what: 'chat template with two nested loops of 10 000 (each bound passes the static check; 10^8 iterations)', input: () => ({ kind: 'cli', argv: ['margins', '--model', 'FOLDER', '--prompt', 'hi', '--good', ' a', '--bad', ' b', '--chat-template', 'true'], folder: withChat('{% for a in range(10000) %}{% for b in range(10000) %}x{% endfor %}{% endfor %}') }), expect: { error: /chat_template ran (100000 interpreter steps|for more than 500 ms) without finishing/ } },
  { id: 'prompt/chat-template-computed-range', what: 'chat template whose range() bound is computed at run time (99999²)', input: () => ({ kind: 'cli', argv: ['margins', '--model', 'FOLDER', '--prompt', 'hi', '--good', ' a', '--bad', ' b', '--chat-template', 'true'], folder: withChat('{% set n = 99999 %}{% for i in range(n * n) %}x{% endfor %}') }), expect: { error: /calls range\(\) with 9999800001 items/ } },

  // ------------------------------------------------------------------ prompts and futures
  { id: 'prompt/empty', what: 'empty prompt', input: () => ({ kind: 'analyse', prompt: '', good: ' a', bad: ' b' }), expect: { error: /the prompt is empty: type some text/ }, ui: true },
  { id: 'prompt/too-long', what: 'a prompt longer than max_position_embeddings (512)', input: () => ({ kind: 'analyse', prompt: 'a b '.repeat(400), good: ' a', bad: ' b' }), expect: { error: /longer than the model's context of 512 tokens \(max_position_embeddings\)/ } },
  { id: 'prompt/bos-text', what: 'prompt starting with "<s>" gets a second BOS', input: () => ({ kind: 'analyse', prompt: '<s> Once upon a time', good: ' there', bad: ' a' }), expect: { ok: 'runs, with a warning naming the double BOS', check: (r) => isAnalysis(r) && r.ids[0] === 1 && r.ids[1] === 1 && (r.warnings ?? []).some((w) => /starts with the BOS text "<s>"/.test(w)) } },
  { id: 'prompt/multibyte', what: '"I ❤ you": byte tokens must join back to the text', input: () => ({ kind: 'analyse', prompt: 'I ❤ you', good: ' a', bad: ' b' }), expect: { ok: 'token pieces join to "<s> I ❤ you" with no U+FFFD', check: (r) => isAnalysis(r) && r.tokens.join('') === '<s> I ❤ you' && !r.tokens.some((t) => t.includes('\uFFFD')) } },
  { id: 'prompt/control-chars', what: 'NUL and escape characters in the prompt', input: () => ({ kind: 'analyse', prompt: 'Once\u0000 upon\u001b a time', good: ' a', bad: ' b' }), expect: { ok: 'analyses with finite margins', check: finiteAnalysis } },
  { id: 'future/empty', what: 'both alternatives empty ("|")', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: '|', bad: ' b' }), expect: { error: /the good future “\|” gives no token: each future needs at least one token/ }, ui: true },
  { id: 'future/empty-bad', what: 'an empty bad future', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' a', bad: '' }), expect: { error: /the bad future is empty: each future needs at least one token/ }, ui: true },
  { id: 'future/chat-in-context', what: 'with the chat template on, " Tom" must not gain a leading "▁" token (id 410)', input: () => ({ kind: 'cli', argv: ['margins', '--model', 'FOLDER', '--prompt', 'Lily gave the ball to', '--good', ' Tom', '--bad', ' Lily', '--chat-template', 'true'], folder: withChat() }), expect: { ok: 'futures resolve to the ids they have after the templated prompt (first id ≠ 410) and margins are not all 0', check: (r) => {
    const o = r as { good?: { sequences: number[][] }; final_margin?: number[] };
    return !!o.good && o.good.sequences[0][0] !== 410 && (o.final_margin ?? []).some((m) => m !== 0);
  } } },
  { id: 'future/same-as-other', what: 'good and bad are the same token', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' there' }), expect: { ok: 'margin exactly 0 everywhere (a specific result, not an error)', check: (r) => isAnalysis(r) && Array.from(r.lensMargin).every((m) => m === 0) && r.sequenceMargin === 0 } },
  { id: 'future/long-branch', what: 'a multi-token future longer than the context left', input: () => ({ kind: 'analyse', prompt: 'a b '.repeat(250), good: ' x'.repeat(20), bad: ' b' }), expect: { error: /prompt plus future: .* longer than the model's context of 512/ } },

  // ------------------------------------------------------------------ interventions
  { id: 'intervention/dose-overflow', what: 'add with alpha 1e39 (overflows float32)', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'add', vector: ONES64, alpha: 1e39 }] }), expect: { error: /appears at blocks\.2\.hook_resid_post \(layer 2\), position 0/ }, ui: false },
  { id: 'intervention/norm-preserving-huge', what: 'add_norm_preserving with alpha 1e39 keeps ‖h‖', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'add_norm_preserving', vector: V64, alpha: 1e39 }] }), expect: { ok: 'finite margins; the residual norm at layer 3 stays near the unsteered one (not 0)', check: (r) => finiteAnalysis(r) && isAnalysis(r) && Array.from(r.residNorms.subarray(3 * r.ids.length, 4 * r.ids.length)).every((n) => n > 0.1) } },
  { id: 'intervention/rotate-zero', what: 'rotate toward a zero vector', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'rotate', vector: ZERO64, theta: 1 }] }), expect: { error: /rotate needs a direction, but the vector is all zeros \(64 values\)/ }, ui: false },
  { id: 'intervention/project-zero', what: 'ablate project with a zero vector', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'ablate', mode: 'project', vector: ZERO64 }] }), expect: { error: /ablate mode "project" needs a direction, but the vector is all zeros/ } },
  { id: 'intervention/wrong-width', what: 'a 32-value vector at a 64-wide hook', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'add', vector: V64.slice(0, 32), alpha: 1 }] }), expect: { error: /vector has 32 values, but blocks\.2\.hook_resid_post is \[pos, d_model\] = 64 wide/ } },
  { id: 'intervention/unknown-hook', what: 'hook "blocks.9.hook_resid_post" on a 5-layer model', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: 'blocks.9.hook_resid_post', type: 'add', vector: V64, alpha: 1 }] }), expect: { error: /layer 9 does not exist \(the model has layers 0\.\.4\)/ } },
  { id: 'intervention/nan-in-vector', what: 'null (NaN written as JSON) in the vector', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'add', vector: [...V64.slice(0, 10), null, ...V64.slice(11)], alpha: 1 }] }), expect: { error: /vector\[10\] is null, not a number \(NaN or Infinity written as JSON null\?\)/ } },
  { id: 'intervention/alpha-string', what: 'alpha "4"', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'add', vector: V64, alpha: '4' }] }), expect: { error: /"alpha" must be a finite number \(got "4"\)/ } },
  { id: 'intervention/unknown-type', what: 'type "steer"', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'steer', vector: V64 }] }), expect: { error: /"type" must be one of add, add_norm_preserving, rotate, ablate, patch, sae_clamp, ban_experts, force_experts, set_expert_weights, patch_route \(got "steer"\)/ } },
  { id: 'intervention/position-outside', what: 'position 99 in a 5-token prompt', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'add', vector: V64, alpha: 1, positions: [99] }] }), expect: { error: /position 99 is outside the run/ } },
  { id: 'intervention/steps-empty', what: 'steps window [3, 3)', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: HOOK, type: 'add', vector: V64, alpha: 1, steps: { start: 3, end: 3 } }] }), expect: { error: /"steps" window \[3, 3\) is empty/ } },
  { id: 'intervention/not-object', what: 'an intervention that is a string', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: ['add 4'] }), expect: { error: /must be a JSON object/ } },
  { id: 'intervention/head-outside', what: 'head 8 of 8 at attn.hook_z', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: 'blocks.1.attn.hook_z', type: 'add', vector: V64.slice(0, 8), alpha: 1, head: 8 }] }), expect: { error: /head 8 does not exist: blocks\.1\.attn\.hook_z has heads 0\.\.7/ } },
  { id: 'intervention/non-steerable', what: 'steering the attention pattern', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: ' there', bad: ' a', interventions: [{ hook: 'blocks.1.attn.hook_pattern', type: 'add', vector: V64, alpha: 1 }] }), expect: { error: /hook_pattern/ } },
  { id: 'intervention/generate-dose-overflow', what: 'generation under add alpha 1e39 never emits token 0', input: () => ({ kind: 'generate', prompt: 'Once upon a time', maxNewTokens: 4, interventions: [{ hook: HOOK, type: 'add', vector: ONES64, alpha: 1e39 }] }), expect: { error: /blocks\.2\.hook_resid_post \(layer 2\)/ } },

  // ------------------------------------------------------------------ vector files
  { id: 'vector/npy-11-bytes-v2', what: 'an 11-byte .npy version 2 file', input: () => ({ kind: 'vector', name: 'v.npy', bytes: Uint8Array.of(0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 2, 0, 1, 0, 0) }), expect: { error: /v\.npy: the file is 11 bytes, too short for a \.npy version 2 header length/ }, ui: false },
  { id: 'vector/npy-no-magic', what: 'a text file named .npy', input: () => ({ kind: 'vector', name: 'v.npy', bytes: text('hello world, not numpy') }), expect: { error: /not a \.npy file/ } },
  { id: 'vector/npy-int', what: '.npy of int32', input: () => ({ kind: 'vector', name: 'v.npy', bytes: npy("{'descr': '<i4', 'fortran_order': False, 'shape': (64,), }", new Uint8Array(256)) }), expect: { error: /dtype <i4 is not supported; save the vector as float32 or float64/ } },
  { id: 'vector/npy-matrix', what: '.npy of shape (2, 64)', input: () => ({ kind: 'vector', name: 'v.npy', bytes: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 64), }", new Uint8Array(512)) }), expect: { error: /shape \(2, 64\) is not one vector/ } },
  { id: 'vector/npy-truncated', what: '.npy of (64,) with 40 data bytes', input: () => ({ kind: 'vector', name: 'v.npy', bytes: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (64,), }", new Uint8Array(40)) }), expect: { error: /shape \(64,\) needs 256 data bytes but the file has 40 \(truncated\)/ } },
  { id: 'vector/npy-nan', what: '.npy with NaN at index 5', input: () => ({ kind: 'vector', name: 'v.npy', bytes: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (64,), }", f32bytes(V64.map((x, i) => (i === 5 ? NaN : x)))) }), expect: { error: /\[5\] is NaN/ } },
  { id: 'vector/npy-wrong-width', what: '.npy of 32 values for a 64-wide hook', input: () => ({ kind: 'vector', name: 'v.npy', bytes: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (32,), }", f32bytes(V64.slice(0, 32))) }), expect: { error: /v\.npy holds a vector of 32 values, but blocks\.2\.hook_resid_post is \[pos, d_model\] = 64 wide/ } },
  { id: 'vector/npy-version-9', what: '.npy version 9', input: () => ({ kind: 'vector', name: 'v.npy', bytes: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f32bytes([1]), 9) }), expect: { error: /\.npy format version 9 is not supported/ } },
  { id: 'vector/npy-ok', what: 'a good .npy (control case)', input: () => ({ kind: 'vector', name: 'v.npy', bytes: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (64,), }", f32bytes(V64)) }), expect: { ok: 'reads 64 values equal to the written ones', check: (r) => r instanceof Float32Array && r.length === 64 && r.every((x, i) => x === Math.fround(V64[i])) } },
  { id: 'vector/st-two-tensors', what: '.safetensors with two tensors, neither named steering_vector', input: () => ({ kind: 'vector', name: 'v.safetensors', bytes: encodeSafetensors([{ name: 'a', shape: [64], dtype: 'F32', data: Float32Array.from(V64) }, { name: 'b', shape: [64], dtype: 'F32', data: Float32Array.from(V64) }]) }), expect: { error: /v\.safetensors: holds 2 tensors \(a, b\)/ } },
  { id: 'vector/st-int', what: '.safetensors vector stored as I32 (names the tensor)', input: () => ({ kind: 'vector', name: 'v.safetensors', bytes: oneTensor({ dtype: 'I32', shape: [64], data_offsets: [0, 256] }, 256) }), expect: { error: /v\.safetensors: tensor "w": dtype I32 cannot be read as float weights/ } },
  { id: 'vector/st-dmodel-mismatch', what: '.safetensors metadata d_model 128 for 64 values', input: () => ({ kind: 'vector', name: 'v.safetensors', bytes: stVector(V64, { d_model: '128' }) }), expect: { error: /metadata says d_model = 128 but the vector has 64 values/ } },
  { id: 'vector/st-inf', what: '.safetensors vector with Infinity', input: () => ({ kind: 'vector', name: 'v.safetensors', bytes: stVector(V64.map((x, i) => (i === 63 ? Infinity : x))) }), expect: { error: /\[63\] is Infinity/ } },
  { id: 'vector/json-not-json', what: '.json that is not JSON (bytes not echoed)', input: () => ({ kind: 'vector', name: 'v.json', bytes: text('{"vector": [1, 2, secret') }), expect: { error: /v\.json: not valid JSON(?![\s\S]*secret)/ } },
  { id: 'vector/json-strings', what: '.json vector of strings', input: () => ({ kind: 'vector', name: 'v.json', bytes: text(JSON.stringify({ vector: V64.map(String) })) }), expect: { error: /vector\[0\] is "0\.25", not a number/ } },
  { id: 'vector/json-object', what: '.json without "vector"', input: () => ({ kind: 'vector', name: 'v.json', bytes: text('{"values": [1, 2]}') }), expect: { error: /expected \{"model", "hook", "d_model", "vector": \[\.\.\.\]\} or an array of numbers/ } },
  { id: 'vector/unknown-ext', what: 'a .pt file', input: () => ({ kind: 'vector', name: 'v.pt', bytes: new Uint8Array(8) }), expect: { error: /v\.pt: unknown vector file type; use \.npy, \.safetensors or \.json/ } },

  // ------------------------------------------------------------------ experiment inputs: sweeps, runner flags, Hub ids
  { id: 'sweep/layer-outside', what: 'sweep over layer 7 of 5', input: () => ({ kind: 'sweep', layers: [7], doses: [1] }), expect: { error: /layer 7 does not exist \(the model has layers 0\.\.4\)/ } },
  { id: 'sweep/nan-dose', what: 'a NaN dose', input: () => ({ kind: 'sweep', layers: [1], doses: [NaN] }), expect: { error: /dose NaN is not a finite number/ } },
  { id: 'sweep/no-dose', what: 'ablate has no dose to sweep', input: () => ({ kind: 'sweep', layers: [1], doses: [1], type: 'ablate' }), expect: { error: /"ablate" has no dose/ } },
  { id: 'sweep/empty', what: 'no layers', input: () => ({ kind: 'sweep', layers: [], doses: [1] }), expect: { error: /a sweep needs at least one layer and one dose/ } },
  { id: 'sweep/rotate-zero', what: 'rotate sweep with a zero vector', input: () => ({ kind: 'sweep', layers: [1], doses: [0.5], type: 'rotate', vector: ZERO64 }), expect: { error: /rotate needs a direction, but the vector is all zeros/ } },
  { id: 'cli/temperature-abc', what: '--temperature abc (used to sample the last id forever)', input: () => ({ kind: 'cli', argv: ['generate', '--model', 'MODEL', '--prompt', 'Once', '--temperature', 'abc'] }), expect: { error: /--temperature "abc": expected a number ≥ 0 and ≤ 1000000/ } },
  { id: 'cli/max-new-abc', what: '--max-new-tokens abc', input: () => ({ kind: 'cli', argv: ['generate', '--model', 'MODEL', '--prompt', 'Once', '--max-new-tokens', 'abc'] }), expect: { error: /--max-new-tokens "abc": expected a whole number ≥ 1/ } },
  { id: 'cli/max-new-negative', what: '--max-new-tokens -5', input: () => ({ kind: 'cli', argv: ['generate', '--model', 'MODEL', '--prompt', 'Once', '--max-new-tokens', '-5'] }), expect: { error: /--max-new-tokens "-5": expected a whole number ≥ 1/ } },
  { id: 'cli/max-new-fraction', what: '--max-new-tokens 2.5', input: () => ({ kind: 'cli', argv: ['generate', '--model', 'MODEL', '--prompt', 'Once', '--max-new-tokens', '2.5'] }), expect: { error: /--max-new-tokens "2\.5": expected a whole number/ } },
  { id: 'cli/top-k-negative', what: '--top-k -1', input: () => ({ kind: 'cli', argv: ['generate', '--model', 'MODEL', '--prompt', 'Once', '--top-k', '-1'] }), expect: { error: /--top-k "-1": expected a whole number ≥ 0/ } },
  { id: 'cli/seed-empty', what: '--seed ""', input: () => ({ kind: 'cli', argv: ['generate', '--model', 'MODEL', '--prompt', 'Once', '--seed', ''] }), expect: { error: /--seed "": expected a whole number/ } },
  { id: 'cli/eps-2', what: '--eps 2 (sink threshold is a probability)', input: () => ({ kind: 'cli', argv: ['sinks', '--model', 'MODEL', '--prompt', 'Once', '--eps', '2'] }), expect: { error: /--eps "2": expected a number ≥ 0 and ≤ 1/ } },
  { id: 'cli/max-new-infinite', what: '--max-new-tokens 1e999 (Infinity)', input: () => ({ kind: 'cli', argv: ['generate', '--model', 'MODEL', '--prompt', 'Once', '--max-new-tokens', '1e999'] }), expect: { error: /--max-new-tokens "1e999": expected a whole number ≥ 1/ } },
  { id: 'cli/dotdot-shard', what: 'a local folder whose index names ../ (read through the CLI)', input: () => ({ kind: 'cli', argv: ['margins', '--model', 'FOLDER', '--prompt', 'Once', '--good', ' a', '--bad', ' b'], folder: sharded((wm) => ({ ...wm, 'model.norm.weight': '../../../../etc/passwd' })) }), expect: { error: /weight_map\["model\.norm\.weight"\] "\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd" has a "\.\." path segment(?![\s\S]*root:)/ } },
  { id: 'hub/dotdot-repo', what: 'repo id ".."', input: () => ({ kind: 'hub', ref: '..' }), expect: { error: /is not a Hub repo id/ } },
  { id: 'hub/models-dot', what: 'repo id "models/."', input: () => ({ kind: 'hub', ref: 'models/.' }), expect: { error: /is not a Hub repo id/ } },
  { id: 'hub/dot-name', what: 'repo id "./name"', input: () => ({ kind: 'hub', ref: './name' }), expect: { error: /is not a Hub repo id/ } },
  { id: 'hub/dotdot-revision', what: 'revision ".."', input: () => ({ kind: 'hub', ref: 'org/name@..' }), expect: { error: /is not a Hub repo id/ } },
  { id: 'hub/dot-revision', what: 'revision "."', input: () => ({ kind: 'hub', ref: 'org/name@.' }), expect: { error: /is not a Hub repo id/ } },
  { id: 'hub/slash-revision', what: 'revision "refs/../../x"', input: () => ({ kind: 'hub', ref: 'org/name@refs/../../x' }), expect: { error: /is not a Hub repo id/ } },
  { id: 'hub/credentials-endpoint', what: 'an endpoint with user:password', input: () => ({ kind: 'hub', ref: 'org/name', endpoint: 'https://u:p@mirror.example' }), expect: { error: /must not hold credentials/ } },
  { id: 'hub/file-endpoint', what: 'a file:// endpoint', input: () => ({ kind: 'hub', ref: 'org/name', endpoint: 'file:///etc' }), expect: { error: /must be an http\(s\) URL/ } },
  { id: 'hub/ok', what: 'org/name@refs/pr/1 (control case: a valid ref)', input: () => ({ kind: 'hub', ref: 'org/name@refs/pr/1' }), expect: { ok: 'resolve URL stays under /org/name/resolve/refs%2Fpr%2F1/', check: (r) => r === 'https://huggingface.co/org/name/resolve/refs%2Fpr%2F1/config.json' } },

  // ------------------------------------------------------------------ SAE files (issue #12)
  saeCase('w-enc-shape', 'W_enc [64, 255] for d_sae 256', { 'sae_weights.safetensors': weightsWith(JR, { W_enc: zeros([64, 255]) }) }, /sae: sae_weights\.safetensors: "W_enc" has shape \[64, 255\], expected \[64, 256\] \(d_in = 64, d_sae = 256\)/),
  saeCase('w-dec-transposed', 'W_dec stored transposed [64, 256]', { 'sae_weights.safetensors': weightsWith(JR, { W_dec: zeros([64, 256]) }) }, /"W_dec" has shape \[64, 256\], expected \[256, 64\]/),
  saeCase('b-enc-shape', 'b_enc of 255 values', { 'sae_weights.safetensors': weightsWith(JR, { b_enc: zeros([255]) }) }, /"b_enc" has shape \[255\], expected \[256\]/),
  saeCase('threshold-2d', 'threshold of shape [1, 256]', { 'sae_weights.safetensors': weightsWith(JR, { threshold: zeros([1, 256]) }) }, /"threshold" has shape \[1, 256\], expected \[256\]/),
  saeCase('cfg-d-in-disagrees', 'cfg.json says d_in 32, the tensors are 64 wide', { 'cfg.json': cfgWith(JR, { d_in: 32 }) }, /"W_enc" has shape \[64, 256\], expected \[32, 256\] \(d_in = 32, d_sae = 256\)/),
  saeCase('no-threshold', 'a JumpReLU without its threshold tensor', { 'sae_weights.safetensors': weightsWith(JR, { threshold: null }) }, /sae_weights\.safetensors has no tensor "threshold" \(it holds W_dec, W_enc, b_dec, b_enc\); a jumprelu SAE needs W_enc, W_dec, b_enc, b_dec, threshold/),
  saeCase('no-w-enc', 'sae_weights.safetensors without W_enc', { 'sae_weights.safetensors': weightsWith(JR, { W_enc: null }) }, /has no tensor "W_enc" \(it holds W_dec, b_dec, b_enc, threshold\)/),
  saeCase('nan-b-enc', 'NaN in b_enc[7]', { 'sae_weights.safetensors': weightsWith(JR, { b_enc: { data: Float32Array.from({ length: 256 }, (_, i) => (i === 7 ? NaN : 0)), shape: [256] } }) }, /"b_enc"\[7\] is NaN; SAE weights must be finite/),
  saeCase('unknown-architecture', 'architecture "gated"', { 'cfg.json': cfgWith(JR, { architecture: 'gated' }) }, /cfg\.json: architecture "gated" is not supported \(supported: standard, jumprelu, topk\)/),
  saeCase('topk-without-k', 'architecture "topk" with no k', { 'cfg.json': cfgWith(JR, { architecture: 'topk' }) }, /a topk SAE needs a positive integer k \(got undefined\)/),
  saeCase('topk-k-too-large', 'topk with k 300 > d_sae 256', { 'cfg.json': cfgWith(JR, { architecture: 'topk', k: 300 }) }, /k = 300 is larger than d_sae = 256/),
  saeCase('standard-gelu', 'a standard SAE with activation_fn_str "gelu"', { 'cfg.json': cfgWith(JR, { architecture: 'standard', activation_fn_str: 'gelu' }) }, /activation_fn_str "gelu" is not supported for a standard SAE/),
  saeCase('normalize-layer-norm', 'normalize_activations "layer_norm"', { 'cfg.json': cfgWith(JR, { normalize_activations: 'layer_norm' }) }, /normalize_activations "layer_norm" is not supported \(only "none"/),
  saeCase('no-hook-name', 'cfg.json without hook_name', { 'cfg.json': cfgWith(JR, { hook_name: undefined }) }, /cfg\.json: "hook_name" is missing/),
  saeCase('head-index', 'hook_head_index 3 (an SAE on one head)', { 'cfg.json': cfgWith(JR, { hook_head_index: 3 }) }, /"hook_head_index" 3: SAEs on one head are not supported/),
  saeCase('d-sae-string', 'd_sae given as the string "256"', { 'cfg.json': cfgWith(JR, { d_sae: '256' }) }, /"d_sae" must be a positive integer \(got "256"\)/),
  saeCase('apply-b-dec-string', 'apply_b_dec_to_input "yes"', { 'cfg.json': cfgWith(JR, { apply_b_dec_to_input: 'yes' }) }, /"apply_b_dec_to_input" must be true or false \(got "yes"\)/),
  saeCase('cfg-not-json', 'cfg.json cut off mid-object', { 'cfg.json': '{"d_in": 64,' }, /sae: cfg\.json is not valid JSON/),
  saeCase('cfg-missing', 'sae_weights.safetensors with no cfg.json', { 'cfg.json': null, 'params.npz': null }, /cfg\.json is missing beside sae_weights\.safetensors/),
  saeCase('truncated-safetensors', 'sae_weights.safetensors cut at 5000 bytes', { 'sae_weights.safetensors': saeFileMap(JR).get('sae_weights.safetensors')!.subarray(0, 5000) }, /sae_weights\.safetensors.*truncated/),
  saeCase('neither-layout', 'a folder with neither layout', { 'sae_weights.safetensors': null, 'params.npz': null }, /no SAE found — expected cfg\.json \+ sae_weights\.safetensors \(SAELens\) or params\.npz \(Gemma Scope\)/),
  saeCase('npz-not-zip', 'params.npz that is not a zip', npzOnly('not a zip', true), /params\.npz: not a valid \.npz \(zip\) file/),
  saeCase('npz-no-w-dec', 'params.npz whose decoder is named "decoder"', npzOnly(npzFromSafetensors(`${JR}/sae_weights.safetensors`, { W_dec: 'decoder' }), true), /params\.npz has no tensor "W_dec" \(it holds decoder, W_enc, b_dec, b_enc, threshold\)/),
  saeCase('npz-int-w-enc', 'params.npz with W_enc as int32', npzOnly(zipSync({ 'W_enc.npy': npy("{'descr': '<i4', 'fortran_order': False, 'shape': (64, 256), }", new Uint8Array(64 * 256 * 4)) }, { level: 0 }), true), /params\.npz\/W_enc\.npy: dtype <i4 is not supported; save the array as float32 or float64/),
  { id: 'sae/npz-bomb', what: 'a params.npz of a few dozen KiB whose W_enc unpacks to 16 MiB of zeros, with 8 MiB of memory budget left', input: () => ({ kind: 'sae', files: saeFileMap(JR, npzOnly(zipSync({ 'W_enc.npy': npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2048, 2048), }", new Uint8Array(2048 * 2048 * 4)) }, { level: 6 }), true)), path: 'params.npz', maxBytes: 8 * 2 ** 20 }), expect: { error: /params\.npz: its arrays unpack to 16 MiB \(the file is \d+(\.\d)? KiB\), more than the 8 MiB the memory budget has left/ } },
  saeCase('npz-no-hook', 'a bare params.npz: no cfg.json, no Gemma Scope path, no hook given', npzOnly(saeFileMap(JR).get('params.npz')!), /params\.npz has no config naming its hook \(Gemma Scope ships none\); give the hook, e\.g\. blocks\.12\.hook_resid_post/, { path: 'params.npz' }),
  saeCase('npz-hook-typo', 'a bare params.npz given the hook "blocks.2.hook_resid"', npzOnly(saeFileMap(JR).get('params.npz')!), /reads blocks\.2\.hook_resid, which this model cannot give it/, { path: 'params.npz', hook: 'blocks.2.hook_resid' }),
  saeCase('d-in-mismatch', 'an SAE with d_in 128 on d_model 64', { 'cfg.json': cfgWith(JR, { d_in: 128 }), 'sae_weights.safetensors': weightsWith(JR, { W_enc: zeros([128, 256]), W_dec: zeros([256, 128]), b_dec: zeros([128]) }) }, /has d_in = 128, but blocks\.2\.hook_resid_post is \[pos, d_model\] = 64 wide in this model \(llama, d_model 64\); it was trained on stories260K/),
  saeCase('hook-layer-missing', 'hook blocks.9.hook_resid_post on a 5-layer model', { 'cfg.json': cfgWith(JR, { hook_name: 'blocks.9.hook_resid_post' }) }, /reads blocks\.9\.hook_resid_post, which this model cannot give it: .*layer 9 does not exist \(the model has layers 0\.\.4\)/),
  saeCase('hook-width', 'a d_in 64 SAE at blocks.1.mlp.hook_post (d_mlp 172)', { 'cfg.json': cfgWith(JR, { hook_name: 'blocks.1.mlp.hook_post' }) }, /has d_in = 64, but blocks\.1\.mlp\.hook_post is \[pos, d_mlp\] = 172 wide/),
  { id: 'sae/ok-sae-lens', what: 'the shared JumpReLU SAELens folder (control case)', input: () => ({ kind: 'sae', files: saeFileMap(JR, { 'params.npz': null }) }), expect: { ok: 'a jumprelu SAE, d_in 64, d_sae 256, at blocks.2.hook_resid_post, no b_dec subtraction', check: (r) => isSaeCfg(r) && r.architecture === 'jumprelu' && r.dIn === 64 && r.dSae === 256 && r.hookName === 'blocks.2.hook_resid_post' && !r.applyBDecToInput } },
  { id: 'sae/ok-npz', what: 'the shared params.npz with its cfg.json beside it (control case)', input: () => ({ kind: 'sae', files: saeFileMap(JR, npzOnly(saeFileMap(JR).get('params.npz')!, true)), path: 'params.npz' }), expect: { ok: 'the same SAE read from Gemma Scope\'s layout', check: (r) => isSaeCfg(r) && r.architecture === 'jumprelu' && r.dSae === 256 && r.hookName === 'blocks.2.hook_resid_post' && r.layout === 'gemma_scope' } },

  // ------------------------------------------------------------------ generation
  { id: 'generate/temperature-nan', what: 'temperature NaN in a generation request', input: () => ({ kind: 'generate', prompt: 'Once upon a time', maxNewTokens: 3, temperature: NaN }), expect: { error: /temperature must be a finite number ≥ 0 \(0 = greedy\), not NaN/ } },
  { id: 'generate/top-k-fraction', what: 'top-k 2.5', input: () => ({ kind: 'generate', prompt: 'Once upon a time', maxNewTokens: 3, temperature: 1, topK: 2.5 }), expect: { error: /top-k must be a whole number ≥ 0 \(0 = all tokens\), not 2\.5/ } },
  { id: 'generate/multibyte-pieces', what: 'generated pieces join to the generated text', input: () => ({ kind: 'generate', prompt: 'I ❤', maxNewTokens: 6 }), expect: { ok: 'tokens joined equal the text (no U+FFFD pieces)', check: (r) => { const g = r as Generation; return g.tokens.join('') === g.text && !g.tokens.some((t) => t.includes('\uFFFD')); } } },

  // ------------------------------------------------------------------ runner arguments (issue #28 kind 1: one schema per command, cli/flags.ts)
  // --model NOMODEL does not exist: a case refused with its flag message (not "no such folder") was refused before any model work.
  ...argCases(),

  // ------------------------------------------------------------------ issue #28: cheap checks first (kind 2)
  { id: 'prompt/10mb', what: 'a 10 MB prompt (used to be tokenised for over a minute before the context check)', input: () => ({ kind: 'analyse', prompt: TEN_MB, good: ' a', bad: ' b' }), expect: { error: /the prompt: 10000000 characters are longer than the model's context of 512 tokens can hold \(no token of this tokenizer covers more than 7 characters, so the context of 512 tokens holds at most 3584 characters\); shorten it/ }, withinMs: 2000 },
  { id: 'prompt/1mb-cli', what: 'a 1 MB prompt through the runner (used to take 19.8 s and 693 MB)', input: () => ({ kind: 'cli', argv: ['margins', '--model', 'MODEL', '--prompt', 'x'.repeat(1_000_000), '--good', ' a', '--bad', ' b'] }), expect: { error: /the prompt: 1000000 characters are longer than the model's context of 512 tokens can hold/ }, withinMs: 5000 },
  { id: 'prompt/just-over-bound', what: 'a prompt one character over context × longest token (3585 characters)', input: () => ({ kind: 'analyse', prompt: 'b'.repeat(3585), good: ' a', bad: ' b' }), expect: { error: /3585 characters are longer than the model's context .* at most 3584 characters/ }, withinMs: 2000 },
  { id: 'prompt/10mb-future', what: 'a 10 MB good future', input: () => ({ kind: 'analyse', prompt: 'Once upon a time', good: TEN_MB, bad: ' b' }), expect: { error: /the good future: 10000000 characters are longer than the model's context of 512 tokens can hold/ }, withinMs: 2000 },
  { id: 'prompt/10mb-generate', what: 'a 10 MB prompt for a generation', input: () => ({ kind: 'generate', prompt: TEN_MB, maxNewTokens: 2 }), expect: { error: /the prompt: 10000000 characters are longer than the model's context/ }, withinMs: 2000 },
  { id: 'prompt/10mb-experiment', what: 'an experiment file whose prompt is 10 MB, through the runner', input: () => ({ kind: 'cli', argv: MARGINS_EXP, experiment: expText((e) => { e.prompt = TEN_MB; }) }), expect: { error: /the prompt: 10000000 characters are longer than the model's context/ }, withinMs: 6000 },
  { id: 'prompt/10mb-probe', what: 'a probe set with a 10 MB prompt', input: () => ({ kind: 'probe', positive: [TEN_MB, 'Once upon a time'], negative: ['The cat sat', 'A dog ran'] }), expect: { error: /the prompt: 10000000 characters are longer than the model's context/ }, withinMs: 2000 },

  // ------------------------------------------------------------------ names that become paths (kind 4)
  { id: 'http/sibling-escape', what: 'GET /models/..%2fmodels-private%2fsecret.txt (a sibling folder of the shared one; a string prefix test served it)', input: () => ({ kind: 'http', url: '/models/..%2fmodels-private%2fsecret.txt' }), expect: { error: /^HTTP 403: forbidden(?![\s\S]*SECRET)/ } },
  { id: 'http/sibling-escape-saes', what: 'GET /saes/..%2fmodels-private%2fsecret.txt', input: () => ({ kind: 'http', url: '/saes/..%2fmodels-private%2fsecret.txt' }), expect: { error: /^HTTP 403/ } },
  { id: 'http/escape-root', what: 'GET /fixtures/..%2f..%2f..%2fetc%2fpasswd', input: () => ({ kind: 'http', url: '/fixtures/..%2f..%2f..%2fetc%2fpasswd' }), expect: { error: /^HTTP 403(?![\s\S]*root:)/ } },
  { id: 'http/malformed-escape', what: 'GET /models/%E0%A4%A (a broken %-escape)', input: () => ({ kind: 'http', url: '/models/%E0%A4%A' }), expect: { error: /^HTTP 400/ } },
  { id: 'http/ok', what: 'GET /models/ok.txt inside the shared folder (control case)', input: () => ({ kind: 'http', url: '/models/ok.txt' }), expect: { ok: 'the file is served', check: (r) => r === 'ok' } },
  { id: 'experiment/bundled-dotdot', what: 'an experiment whose bundled model is "../../../shared/models/aidreams260K" (the runner loaded that folder)', input: () => ({ kind: 'cli', argv: MARGINS_EXP, experiment: expText((e) => { e.model = { kind: 'bundled', name: '../../../shared/models/aidreams260K' }; }) }), expect: { error: /model\.name: a bundled model is named by its folder under models\// } },
  { id: 'experiment/bundled-not-shipped', what: 'an experiment naming a bundled model this copy does not ship ("aidreams260K")', input: () => ({ kind: 'cli', argv: MARGINS_EXP, experiment: expText((e) => { e.model = { kind: 'bundled', name: 'aidreams260K' }; }) }), expect: { error: /bundled model "aidreams260K", which is not one of the bundled models \(stories260K, stories260K-happy-ft\)/ } },
  { id: 'experiment/bundled-ok', what: 'an experiment on the bundled stories260K, through the runner (control case)', input: () => ({ kind: 'cli', argv: MARGINS_EXP, experiment: expText() }), expect: { ok: 'margins with a finite final margin', check: (r) => isObj(r) && Array.isArray(r.final_margin) && (r.final_margin as number[]).every(Number.isFinite) } },

  // ------------------------------------------------------------------ errors that name the right place (kind 5)
  { id: 'gguf/block-count', what: 'GGUF llama.block_count = 2^31 (was reported as config.json "num_hidden_layers")', input: () => ({ kind: 'model', files: ggufMeta('llama.block_count', 2 ** 31) }), expect: { error: /model\.gguf: metadata key "llama\.block_count" is 2147483648; expected a whole number in \[1, 1024\](?![\s\S]*config\.json)/ } },
  { id: 'gguf/embedding-length', what: 'GGUF llama.embedding_length = 0', input: () => ({ kind: 'model', files: ggufMeta('llama.embedding_length', 0) }), expect: { error: /metadata key "llama\.embedding_length" is 0; expected a whole number in \[1, 131072\](?![\s\S]*config\.json)/ } },
  { id: 'gguf/context-length', what: 'GGUF llama.context_length = 0', input: () => ({ kind: 'model', files: ggufMeta('llama.context_length', 0) }), expect: { error: /metadata key "llama\.context_length" is 0(?![\s\S]*config\.json)/ } },
  { id: 'gguf/rope-freq-base', what: 'GGUF llama.rope.freq_base = 0', input: () => ({ kind: 'model', files: ggufMeta('llama.rope.freq_base', 0) }), expect: { error: /metadata key "llama\.rope\.freq_base" is 0(?![\s\S]*config\.json)/ } },
  { id: 'gguf/head-count', what: 'GGUF llama.attention.head_count = 0', input: () => ({ kind: 'model', files: ggufMeta('llama.attention.head_count', 0) }), expect: { error: /metadata key "llama\.attention\.head_count" is 0(?![\s\S]*config\.json)/ } },
  { id: 'gguf/head-count-kv-not-dividing', what: 'GGUF head_count_kv 3 for 8 heads (a derived check, after the metadata)', input: () => ({ kind: 'model', files: ggufMeta('llama.attention.head_count_kv', 3) }), expect: { error: /model\.gguf metadata "llama\.attention\.head_count" 8 is not a multiple of "llama\.attention\.head_count_kv" 3(?![\s\S]*config\.json)/ } },
  { id: 'gguf/beside-safetensors', what: 'a folder holding model.gguf and another model\'s safetensors + config.json (silently used the safetensors)', input: () => { const f = modelFiles(); f.set('model.gguf', ggufFolder().get('model.gguf')!); return { kind: 'model', files: f }; }, expect: { error: /the folder holds two checkpoints, model\.gguf and model\.safetensors \(with config\.json\)/ } },
  { id: 'cli/model-is-file', what: '--model pointing at model.safetensors (said "tokenizer.json is missing")', input: () => ({ kind: 'cli', argv: ['margins', '--model', 'MODELFILE', '--prompt', 'Once', '--good', ' a', '--bad', ' b'] }), expect: { error: /model\.safetensors is a file, not a folder: give the folder that holds the model's files/ } },
  saeCase('d-sae-1e400', 'cfg.json d_sae 1e400 (was reported as "got null")', { 'cfg.json': cfgWith(JR, { d_sae: 123456789 }).replace('123456789', '1e400') }, /"d_sae" must be a positive integer \(got Infinity, not a finite number\)/),
  saeCase('hook-disagrees', 'a hook given beside a SAELens cfg.json naming another (was silently ignored)', { 'params.npz': null }, /cfg\.json names the hook blocks\.2\.hook_resid_post, but blocks\.1\.hook_resid_post was given/, { hook: 'blocks.1.hook_resid_post' }),
  saeCase('npz-hook-disagrees', 'a hook given for a params.npz whose cfg.json names another', npzOnly(saeFileMap(JR).get('params.npz')!, true), /cfg\.json names the hook blocks\.2\.hook_resid_post, but blocks\.3\.hook_resid_post was given/, { path: 'params.npz', hook: 'blocks.3.hook_resid_post' }),
  { id: 'sae/hook-agrees', what: 'the same hook as cfg.json given (control case)', input: () => ({ kind: 'sae', files: saeFileMap(JR, { 'params.npz': null }), hook: HOOK }), expect: { ok: 'loads at blocks.2.hook_resid_post', check: (r) => isSaeCfg(r) && r.hookName === HOOK } },

  // ------------------------------------------------------------------ files that say two things (kind 6)
  { id: 'experiment/duplicate-prompt', what: 'an experiment with "prompt" twice (the last won silently)', input: () => ({ kind: 'experiment', text: dupExp('prompt', 'The cat') }), expect: { error: /the experiment names "prompt" twice/ } },
  { id: 'experiment/duplicate-nested', what: 'an experiment with "dModel" twice inside vectors[0]', input: () => ({ kind: 'experiment', text: expText().replace('"dModel":64', '"dModel":64,"dModel":32') }), expect: { error: /names "vectors\[0\]\.dModel" twice/ } },
  { id: 'experiment/duplicate-cli', what: 'an experiment with "prompt" twice, through the runner', input: () => ({ kind: 'cli', argv: MARGINS_EXP, experiment: dupExp('prompt', 'The cat') }), expect: { error: /--experiment .*: the experiment names "prompt" twice/ } },
  { id: 'experiment/version-string', what: 'version "2" as a string (was "Invalid input")', input: () => ({ kind: 'experiment', text: expText((e) => { e.version = '2'; }) }), expect: { error: /"version" is "2" \(a string\); a number 1–\d is expected/ } },
  { id: 'experiment/version-zero', what: 'version 0', input: () => ({ kind: 'experiment', text: expText((e) => { e.version = 0; }) }), expect: { error: /"version" is 0; a number 1–\d is expected/ } },
  { id: 'experiment/vector-float32-overflow', what: 'a vector value 1e39 (finite JSON, infinite as float32)', input: () => ({ kind: 'experiment', text: expText((e) => { (e.vectors as { values: number[] }[])[0].values = V64.map((x, i) => (i === 3 ? 1e39 : x)); }) }), expect: { error: /vectors\[0\]\.values\[3\]: is 1e\+39, beyond the float32 range/ } },
  { id: 'experiment/utf16', what: 'an experiment file saved as UTF-16', input: () => ({ kind: 'experiment', text: asUtf16(expText()) }), expect: { error: /the experiment file is not UTF-8 .*UTF-16/ } },
  { id: 'values/duplicate-header', what: 'a values CSV with "good" twice in the header (the first column was dropped)', input: () => ({ kind: 'values', name: 'v.csv', text: 'name,good,place,good\nTom, a,park, b\n' }), expect: { error: /the header names the column "good" twice \(columns 2 and 4\)/ } },
  { id: 'values/duplicate-tsv-header', what: 'a values TSV with a repeated column', input: () => ({ kind: 'values', name: 'v.tsv', text: 'name\tname\nTom\tAnn\n' }), expect: { error: /names the column "name" twice/ } },
  { id: 'values/duplicate-jsonl-key', what: 'a JSON Lines row with "name" twice', input: () => ({ kind: 'values', name: 'v.jsonl', text: '{"name":"Tom","name":"Ann"}\n' }), expect: { error: /values line 1 names "name" twice/ } },
  { id: 'values/utf16-bom', what: 'a values CSV saved as UTF-16 with a BOM (read as mojibake, "no column")', input: () => ({ kind: 'values', name: 'v.csv', text: asUtf16('name,good\nTom, a\n') }), expect: { error: /values: the table is not UTF-8 \(it starts with a UTF-16 byte-order mark\)/ } },
  { id: 'labelled/utf16-bom', what: 'a probe set CSV saved as UTF-16 (was "no {prompt} column")', input: () => ({ kind: 'labelled', name: 'set.csv', text: asUtf16('prompt,label\nhappy,1\nsad,0\n') }), expect: { error: /set\.csv is not UTF-8 \(it starts with a UTF-16 byte-order mark\); it looks like UTF-16/ } },
  { id: 'labelled/utf16-no-bom', what: 'a probe set CSV saved as UTF-16 without a BOM (NUL between letters)', input: () => ({ kind: 'labelled', name: 'set.csv', text: asUtf16('prompt,label\nhappy,1\nsad,0\n', false) }), expect: { error: /set\.csv is not UTF-8 \(\d+ of its first \d+ characters are NUL/ } },
  { id: 'labelled/duplicate-header', what: 'a probe set CSV with "label" twice in the header', input: () => ({ kind: 'labelled', name: 'set.csv', text: 'text,label,label\nhappy,1,0\nsad,0,1\n' }), expect: { error: /set\.csv: the header names the column "label" twice \(columns 2 and 3\)/ } },
  { id: 'labelled/duplicate-key', what: 'a probe set JSON with "positive" twice', input: () => ({ kind: 'labelled', name: 'set.json', text: '{"positive":["a","b"],"negative":["c","d"],"positive":["e","f"]}' }), expect: { error: /set\.json names "positive" twice/ } },
  { id: 'vector/json-duplicate', what: 'a .json vector file with "vector" twice', input: () => ({ kind: 'vector', name: 'v.json', bytes: text(`{"vector":${JSON.stringify(V64)},"vector":${JSON.stringify(ONES64)}}`) }), expect: { error: /v\.json names "vector" twice/ } },

  // ------------------------------------------------------------------ degenerate studies (kind 7)
  { id: 'probe/same-prompts', what: 'a probe whose two classes are the same prompts (printed accuracy 0, AUROC 0)', input: () => ({ kind: 'probe', positive: ['Once upon a time', 'The cat sat', 'A dog ran'], negative: ['A dog ran', 'Once upon a time', 'The cat sat'] }), expect: { error: /the positive and negative sets hold the same 3 distinct prompts: a probe needs two classes that differ/ }, withinMs: 2000 },
  { id: 'probe/same-prompts-repeated', what: 'the same two prompts, one repeated, in both classes', input: () => ({ kind: 'probe', positive: ['Once upon a time', 'The cat sat'], negative: ['Once upon a time', 'The cat sat', 'Once upon a time'] }), expect: { error: /hold the same 2 distinct prompts/ } },
  { id: 'probe/indistinguishable', what: 'different prompts read at position 0 (BOS): identical activations in both classes at every layer', input: () => ({ kind: 'probe', positive: ['Once upon a time', 'The cat sat'], negative: ['A dog ran', 'She was happy'], position: 0 }), expect: { error: /the two classes are indistinguishable: at every layer each positive example's activation equals a negative example's/ } },
  { id: 'probe/ok', what: 'two different classes (control case)', input: () => ({ kind: 'probe', positive: ['Lily was happy', 'Tom was glad', 'The sun was bright'], negative: ['Lily was sad', 'Tom was angry', 'The rain was cold'] }), expect: { ok: 'accuracies in [0, 1] at every layer', check: (r) => isObj(r) && Array.isArray(r.accuracy) && (r.accuracy as number[]).every((a) => a >= 0 && a <= 1) } },

  // ------------------------------------------------------------------ CI apt source (kind 9)
  { id: 'ci/deb822', what: '.ci/run derives the backports host from a deb822 debian.sources (as Debian 12 ships it)', input: () => ({ kind: 'ci', files: { 'sources.list.d/debian.sources': DEB822 }, suite: 'bookworm' }), expect: { ok: 'the URI of the stanza whose Suites hold bookworm', check: (r) => r === 'http://mirror.example/debian' } },
  { id: 'ci/one-line', what: '.ci/run reads a one-line sources.list with [options]', input: () => ({ kind: 'ci', files: { 'sources.list': '# comment\ndeb [signed-by=/usr/share/keyrings/k.gpg arch=amd64] http://mirror.example/debian bookworm main\n' }, suite: 'bookworm' }), expect: { ok: 'the one-line source\'s URI', check: (r) => r === 'http://mirror.example/debian' } },
  { id: 'ci/no-source', what: '.ci/run with only a security source for the release: no mirror to derive', input: () => ({ kind: 'ci', files: { 'sources.list.d/debian.sources': DEB822.split('\n\n')[1] }, suite: 'bookworm' }), expect: { error: /no apt source for the suite bookworm/ } },
  { id: 'ci/disabled-file', what: '.ci/run ignores a disabled sources file (not .list / .sources)', input: () => ({ kind: 'ci', files: { 'sources.list.d/other.sources.disabled': DEB822 }, suite: 'bookworm' }), expect: { error: /no apt source for the suite bookworm/ } },
];

/** The runner's argument cases of issue #28: strict flags, typed values, checks against the model's config. */
function argCases(): BadInputCase[] {
  const N = 'NOMODEL';
  const set = { 'set.json': text(JSON.stringify({ positive: ['Lily is happy', 'Tom is glad', 'the sun'], negative: ['Lily is sad', 'Tom is upset', 'the rain'] })) };
  const values = { 'values.csv': text('prompt,good,bad,corrupt\nLily gave the ball to,  Tom, Lily,Tom gave the ball to\n') };
  const cli = (id: string, what: string, argv: string[], error: RegExp, folder?: Record<string, Uint8Array>): BadInputCase =>
    ({ id: `cli-args/${id}`, what, input: () => ({ kind: 'cli', argv, folder: folder ? new Map(Object.entries(folder)) : undefined }), expect: { error } });
  const iv = JSON.stringify({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: V64, alpha: 4 });
  return [
    cli('unknown-flag', 'margins --promt (a typo: used to be ignored)', ['margins', '--model', N, '--promt', 'Hi', '--good', ' a', '--bad', ' b'], /--promt: unknown flag for margins; did you mean --prompt\?/),
    cli('unknown-max-tokens', 'generate --max-tokens 3 (used to generate 32 tokens)', ['generate', '--model', N, '--prompt', 'Once', '--max-tokens', '3'], /--max-tokens: unknown flag for generate; did you mean --max-new-tokens\?/),
    cli('flag-of-another-command', 'margins --eps 0.5 (a sinks flag; used to be ignored)', ['margins', '--model', N, '--prompt', 'Hi', '--good', ' a', '--bad', ' b', '--eps', '0.5'], /--eps: margins does not take this flag \(it is a flag of sinks, batch\)/),
    cli('sinks-intervention-read', 'sinks --intervention at a hook the model lacks (the intervention used to be ignored: unsteered statistics, exit 0)', ['sinks', '--model', 'MODEL', '--prompt', 'Once upon a time', '--intervention', JSON.stringify({ hook: 'blocks.9.hook_resid_post', type: 'add', vector: V64, alpha: 4 })], /--intervention 1: .*blocks\.9\.hook_resid_post/),
    cli('repeated-flag', 'margins --prompt given twice (the last used to win)', ['margins', '--model', N, '--prompt', 'Hi', '--prompt', 'Bye', '--good', ' a', '--bad', ' b'], /--prompt given twice \("Hi" and "Bye"\): it takes one value \(only --intervention may repeat\)/),
    cli('window-seed-abc', 'window --seed abc (used to run as seed 0)', ['window', '--model', N, '--prompt', 'Once', '--good', ' a', '--bad', ' b', '--intervention', iv, '--max-new-tokens', '4', '--seed', 'abc'], /--seed "abc": expected a whole number ≥ 0/),
    cli('branch-seed-negative', 'branch --seed -1', ['branch', '--model', N, '--prompt', 'Once', '--at', '0', '--alt', ' dog', '--seed', '-1'], /--seed "-1": expected a whole number ≥ 0/),
    cli('probe-l2-infinite', 'probe --l2 1e400 (used to print "l2": null)', ['probe', '--model', N, '--set', 'FOLDER/set.json', '--l2', '1e400'], /--l2 "1e400": expected a number > 0 \(this one is not finite\)/, set),
    cli('report-threshold-infinite', 'report --threshold 1e400 (used to print null)', ['report', '--model', N, '--clean', 'a', '--corrupt', 'b', '--good', ' a', '--bad', ' b', '--threshold', '1e400'], /--threshold "1e400": expected a number ≥ 0 \(this one is not finite\)/),
    cli('batch-eps-2', 'batch --eps 2', ['batch', '--model', N, '--values', 'v.csv', '--eps', '2'], /--eps "2": expected a number ≥ 0 and ≤ 1/),
    cli('batch-visible-negative', 'batch --visible-threshold -1', ['batch', '--model', N, '--values', 'v.csv', '--visible-threshold', '-1'], /--visible-threshold "-1": expected a number ≥ 0/),
    cli('forks-alternatives-0', 'forks --alternatives 0 (used to give "score": null)', ['forks', '--model', N, '--prompt', 'Once', '--good', ' a', '--bad', ' b', '--samples', '2', '--alternatives', '0'], /--alternatives "0": expected a whole number ≥ 1/),
    cli('probe-folds-0', 'probe --folds 0 (used to become 2)', ['probe', '--model', N, '--set', 'FOLDER/set.json', '--folds', '0'], /--folds "0": expected a whole number ≥ 2/, set),
    cli('probe-folds-1', 'probe --folds 1 (used to become 2)', ['probe', '--model', N, '--set', 'FOLDER/set.json', '--folds', '1'], /--folds "1": expected a whole number ≥ 2/, set),
    cli('probe-folds-1000', 'probe --folds 1000 on a set of 3 + 3 (used to become the class size)', ['probe', '--model', N, '--set', 'FOLDER/set.json', '--folds', '1000'], /--folds "1000": expected at most the smaller class of the set \(3 positive, 3 negative: ≤ 3\)/, set),
    cli('sweep-layers-empty-item', 'sweep --layers 1,,2 (used to run layers [1, 0, 2])', ['sweep', '--model', N, '--prompt', 'Hi', '--good', ' a', '--bad', ' b', '--vector', 'v.npy', '--layers', '1,,2', '--doses', '0,1'], /--layers "1,,2": give layer indices like 0,1,2 \(whole numbers ≥ 0, no empty items\)/),
    cli('sweep-layer-out-of-range', 'sweep --layers 0,7 on a 5-layer model (checked from config.json before any forward)', ['sweep', '--model', 'MODEL', '--prompt', 'Hi', '--good', ' a', '--bad', ' b', '--intervention-template', JSON.stringify({ hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: V64 }), '--layers', '0,7', '--doses', '0,1'], /--layers: layer 7 is out of range; this model has 5 layers \(0\.\.4\)/),
    cli('sae-top-k-0', 'sae --top-k 0 (used to give empty lists)', ['sae', '--model', N, '--sae', 'x', '--prompt', 'Hi', '--top-k', '0'], /--top-k "0": expected a whole number ≥ 1/),
    cli('sae-pin-abc', 'sae --pin abc (used to say "feature NaN does not exist")', ['sae', '--model', N, '--sae', 'x', '--prompt', 'Hi', '--pin', 'abc'], /--pin "abc": expected comma-separated whole numbers ≥ 0 \(item 1 "abc" is not\)/),
    cli('branch-max-new-0', 'branch --max-new-tokens 0 (used to be refused as "--at must be 0..-1")', ['branch', '--model', N, '--prompt', 'Once', '--at', '0', '--alt', ' dog', '--max-new-tokens', '0'], /--max-new-tokens "0": expected a whole number ≥ 1/),
    cli('batch-patch-cell-layer', 'batch --patch-cell resid_pre:99:0 on a 5-layer model (used to give per-row errors, exit 0, null aggregates)', ['batch', '--model', 'MODEL', '--values', 'FOLDER/values.csv', '--patch-cell', 'resid_pre:99:0'], /--patch-cell resid_pre:99:0: layer 99 is out of range; this model has 5 layers \(0\.\.4\)/, values),
    cli('top-k-max-new-infinite', 'generate --max-new-tokens 1e400', ['generate', '--model', N, '--prompt', 'Once', '--max-new-tokens', '1e400'], /--max-new-tokens "1e400": expected a whole number ≥ 1 and ≤ 1048576 \(this one is not finite\)/),
    cli('intervention-json-early', 'margins with an --intervention that is not JSON, refused before the model (NOMODEL)', ['margins', '--model', N, '--prompt', 'Hi', '--good', ' a', '--bad', ' b', '--intervention', '{hook'], /--intervention 1: not valid JSON/),
    cli('bool-yes', '--chat-template yes', ['margins', '--model', N, '--prompt', 'Hi', '--good', ' a', '--bad', ' b', '--chat-template', 'yes'], /--chat-template "yes": expected true or false/),
    cli('window-k-max-past-n', 'window --k-max 9 with --max-new-tokens 4', ['window', '--model', N, '--prompt', 'Once', '--good', ' a', '--bad', ' b', '--intervention', iv, '--max-new-tokens', '4', '--k-max', '9'], /--k-max "9": expected a start step 0\.\.3/),
  ];
}
