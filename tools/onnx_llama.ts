/**
 * Writes a Llama as an ONNX graph (opset 14, standard ops only) in the transformers.js decoder
 * layout — inputs input_ids, attention_mask, position_ids [batch, seq] (int64) and
 * past_key_values.{l}.key|value [batch, n_kv_heads, past, d_head]; outputs logits
 * [batch, seq, vocab] and present.{l}.key|value — so transformers.js (onnxruntime-web) can run the
 * same random-weight model the engine runs, for benchmarks only. The graph follows HF
 * LlamaForCausalLM: RMSNorm, rotate_half RoPE, grouped-query attention with a causal + padding
 * mask, SwiGLU MLP, tied or untied head.
 *
 * Serialised with protobufjs from the fields of onnx.proto (github.com/onnx/onnx, onnx/onnx.proto).
 */
import protobuf from 'protobufjs';

/** The onnx.proto messages and field numbers this writer uses (names as protobufjs camel-cases them). */
const ONNX_PROTO = {
  nested: {
    onnx: {
      nested: {
        AttributeProto: { fields: { name: { type: 'string', id: 1 }, type: { type: 'int32', id: 20 }, f: { type: 'float', id: 2 }, i: { type: 'int64', id: 3 }, t: { type: 'TensorProto', id: 5 }, ints: { rule: 'repeated', type: 'int64', id: 8 } } },
        ValueInfoProto: { fields: { name: { type: 'string', id: 1 }, type: { type: 'TypeProto', id: 2 } } },
        NodeProto: { fields: { input: { rule: 'repeated', type: 'string', id: 1 }, output: { rule: 'repeated', type: 'string', id: 2 }, name: { type: 'string', id: 3 }, opType: { type: 'string', id: 4 }, attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 } } },
        ModelProto: { fields: { irVersion: { type: 'int64', id: 1 }, producerName: { type: 'string', id: 2 }, graph: { type: 'GraphProto', id: 7 }, opsetImport: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 } } },
        GraphProto: { fields: { node: { rule: 'repeated', type: 'NodeProto', id: 1 }, name: { type: 'string', id: 2 }, initializer: { rule: 'repeated', type: 'TensorProto', id: 5 }, input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 }, output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 } } },
        TensorProto: { fields: { dims: { rule: 'repeated', type: 'int64', id: 1 }, dataType: { type: 'int32', id: 2 }, name: { type: 'string', id: 8 }, rawData: { type: 'bytes', id: 9 } } },
        TensorShapeProto: { fields: { dim: { rule: 'repeated', type: 'Dimension', id: 1 } }, nested: { Dimension: { fields: { dimValue: { type: 'int64', id: 1 }, dimParam: { type: 'string', id: 2 } } } } },
        TypeProto: { fields: { tensorType: { type: 'Tensor', id: 1 } }, nested: { Tensor: { fields: { elemType: { type: 'int32', id: 1 }, shape: { type: 'TensorShapeProto', id: 2 } } } } },
        OperatorSetIdProto: { fields: { domain: { type: 'string', id: 1 }, version: { type: 'int64', id: 2 } } },
      },
    },
  },
};

const FLOAT = 1, INT64 = 7, BOOL = 9;
const ATTR_INT = 2, ATTR_INTS = 7;

type Attr = { name: string; type: number; i?: number; ints?: number[] };
interface Node { input: string[]; output: string[]; name: string; opType: string; attribute: Attr[] }

/** The Llama to write: config fields (HF names) and weights under HF names, nn.Linear layout [out, in]. */
export interface OnnxLlama {
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  vocab_size: number;
  rms_norm_eps: number;
  rope_theta: number;
  weights: Map<string, Float32Array>;
}

/**
 * The ONNX model bytes of a Llama.
 * @throws Error when a weight is missing.
 */
export function llamaOnnx(c: OnnxLlama): Uint8Array {
  const nodes: Node[] = [];
  const inits: { dims: number[]; dataType: number; name: string; rawData: Uint8Array }[] = [];
  let uid = 0;
  const op = (opType: string, input: string[], attrs: Attr[] = [], nOut = 1): string[] => {
    const id = uid++;
    const output = Array.from({ length: nOut }, (_, i) => `${opType.toLowerCase()}_${id}_${i}`);
    nodes.push({ input, output, name: `${opType}_${id}`, opType, attribute: attrs });
    return output;
  };
  const op1 = (opType: string, input: string[], attrs: Attr[] = []) => op(opType, input, attrs)[0];
  const ints = (name: string, v: number[]): Attr => ({ name, type: ATTR_INTS, ints: v });
  const int = (name: string, v: number): Attr => ({ name, type: ATTR_INT, i: v });
  const init = (name: string, dims: number[], data: Float32Array | BigInt64Array, dataType = FLOAT) => {
    inits.push({ name, dims, dataType, rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) });
    return name;
  };
  const i64 = (name: string, v: number[]) => init(name, [v.length], BigInt64Array.from(v.map(BigInt)), INT64);
  const i64s = (name: string, v: number) => init(name, [], BigInt64Array.of(BigInt(v)), INT64);
  const f32 = (name: string, v: number[]) => init(name, v.length === 1 ? [] : [v.length], Float32Array.from(v));
  const w = (name: string) => {
    const t = c.weights.get(name);
    if (!t) throw new Error(`onnx_llama: weight ${name} is missing`);
    return t;
  };
  /** nn.Linear weight [out, in] → initializer [in, out] for MatMul. */
  const linearT = (name: string, out: number, inp: number) => {
    const src = w(name), t = new Float32Array(out * inp);
    for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) t[i * out + o] = src[o * inp + i];
    return init(`${name}.T`, [inp, out], t);
  };

  const D = c.hidden_size, H = c.num_attention_heads, KV = c.num_key_value_heads, hd = D / H, G = H / KV, F = c.intermediate_size, V = c.vocab_size;
  const eps = f32('eps', [c.rms_norm_eps]);
  const rmsNorm = (x: string, weight: string) => {
    const ms = op1('ReduceMean', [op1('Mul', [x, x])], [ints('axes', [-1]), int('keepdims', 1)]);
    const r = op1('Sqrt', [op1('Add', [ms, eps])]);
    return op1('Mul', [op1('Div', [x, r]), init(weight, [D], w(weight))]);
  };

  // Embedding and rotary tables (rotate_half layout, HF LlamaRotaryEmbedding).
  let h = op1('Gather', [init('model.embed_tokens.weight', [V, D], w('model.embed_tokens.weight')), 'input_ids']);
  const invFreq = f32('inv_freq', Array.from({ length: hd / 2 }, (_, j) => 1 / c.rope_theta ** ((2 * j) / hd)));
  const pos = op1('Unsqueeze', [op1('Cast', ['position_ids'], [int('to', FLOAT)]), i64('axis2', [2])]); // [B, S, 1]
  const freqs = op1('Mul', [pos, invFreq]); // [B, S, hd/2]
  const emb = op1('Concat', [freqs, freqs], [int('axis', -1)]);
  const axis1 = i64('axis1', [1]);
  const cos = op1('Unsqueeze', [op1('Cos', [emb]), axis1]); // [B, 1, S, hd]
  const sin = op1('Unsqueeze', [op1('Sin', [emb]), axis1]);
  const half = [i64('zero', [0]), i64('half', [hd / 2]), i64('full', [hd]), i64('axis3', [3])];
  const rope = (x: string) => {
    const x1 = op1('Slice', [x, half[0], half[1], half[3]]);
    const x2 = op1('Slice', [x, half[1], half[2], half[3]]);
    const rot = op1('Concat', [op1('Neg', [x2]), x1], [int('axis', 3)]);
    return op1('Add', [op1('Mul', [x, cos]), op1('Mul', [rot, sin])]);
  };
  // Additive mask [B, 1, S, T]: key j visible to the query at position p when j ≤ p and attention_mask[j] = 1.
  const total = op1('Gather', [op1('Shape', ['attention_mask']), i64('one', [1])]);
  const keys = op1('Range', [i64s('zero_s', 0), op1('Squeeze', [total, i64('axis0', [0])]), i64s('one_s', 1)]);
  const causal = op1('LessOrEqual', [keys, op1('Unsqueeze', ['position_ids', i64('axis2b', [2])])]); // [B, S, T]
  const padOk = op1('Unsqueeze', [op1('Cast', ['attention_mask'], [int('to', BOOL)]), i64('axis1b', [1])]); // [B, 1, T]
  const allowed = op1('And', [causal, padOk]);
  const mask = op1('Unsqueeze', [op1('Where', [allowed, f32('zero_f', [0]), f32('neg_inf', [-3.4e38])]), i64('axis1c', [1])]);
  const scale = f32('scale', [1 / Math.sqrt(hd)]);
  const headsShape = i64('heads_shape', [0, 0, H, hd]);
  const kvShape = i64('kv_shape', [0, 0, KV, hd]);
  const repShape = i64('rep_shape', [0, 0, 1, -1, hd]);
  const groupShape = i64('group_shape', [0, H, -1, hd]);
  const modelShape = i64('model_shape', [0, 0, D]);
  const perm = ints('perm', [0, 2, 1, 3]);

  const inputs: { name: string; elem: number; dims: (number | string)[] }[] = [
    { name: 'input_ids', elem: INT64, dims: ['batch_size', 'sequence_length'] },
    { name: 'attention_mask', elem: INT64, dims: ['batch_size', 'total_sequence_length'] },
    { name: 'position_ids', elem: INT64, dims: ['batch_size', 'sequence_length'] },
  ];
  const outputs: { name: string; elem: number; dims: (number | string)[] }[] = [];
  const presents: [string, string][] = [];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}.`;
    const n1 = rmsNorm(h, `${p}input_layernorm.weight`);
    const heads = (x: string, shape: string) => op1('Transpose', [op1('Reshape', [x, shape])], [perm]);
    const q = rope(heads(op1('MatMul', [n1, linearT(`${p}self_attn.q_proj.weight`, D, D)]), headsShape));
    const k = rope(heads(op1('MatMul', [n1, linearT(`${p}self_attn.k_proj.weight`, KV * hd, D)]), kvShape));
    const v = heads(op1('MatMul', [n1, linearT(`${p}self_attn.v_proj.weight`, KV * hd, D)]), kvShape);
    inputs.push({ name: `past_key_values.${l}.key`, elem: FLOAT, dims: ['batch_size', KV, 'past_sequence_length', hd] });
    inputs.push({ name: `past_key_values.${l}.value`, elem: FLOAT, dims: ['batch_size', KV, 'past_sequence_length', hd] });
    const kAll = op1('Concat', [`past_key_values.${l}.key`, k], [int('axis', 2)]);
    const vAll = op1('Concat', [`past_key_values.${l}.value`, v], [int('axis', 2)]);
    presents.push([kAll, `present.${l}.key`], [vAll, `present.${l}.value`]);
    const repeat = (x: string) => {
      const u = op1('Reshape', [x, repShape]); // [B, KV, 1, T, hd]
      return op1('Reshape', [op1('Concat', Array(G).fill(u), [int('axis', 2)]), groupShape]); // [B, H, T, hd]
    };
    const scores = op1('Add', [op1('Mul', [op1('MatMul', [q, op1('Transpose', [repeat(kAll)], [ints('perm', [0, 1, 3, 2])])]), scale]), mask]);
    const probs = op1('Softmax', [scores], [int('axis', -1)]);
    const z = op1('Reshape', [op1('Transpose', [op1('MatMul', [probs, repeat(vAll)])], [perm]), modelShape]);
    h = op1('Add', [h, op1('MatMul', [z, linearT(`${p}self_attn.o_proj.weight`, D, D)])]);
    const n2 = rmsNorm(h, `${p}post_attention_layernorm.weight`);
    const g = op1('MatMul', [n2, linearT(`${p}mlp.gate_proj.weight`, F, D)]);
    const u = op1('MatMul', [n2, linearT(`${p}mlp.up_proj.weight`, F, D)]);
    const act = op1('Mul', [op1('Mul', [g, op1('Sigmoid', [g])]), u]);
    h = op1('Add', [h, op1('MatMul', [act, linearT(`${p}mlp.down_proj.weight`, D, F)])]);
  }
  const nf = rmsNorm(h, 'model.norm.weight');
  const head = c.weights.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight';
  nodes.push({ input: [nf, linearT(head, V, D)], output: ['logits'], name: 'lm_head', opType: 'MatMul', attribute: [] });
  outputs.push({ name: 'logits', elem: FLOAT, dims: ['batch_size', 'sequence_length', V] });
  for (const [src, name] of presents) {
    nodes.push({ input: [src], output: [name], name: `${name}_out`, opType: 'Identity', attribute: [] });
    outputs.push({ name, elem: FLOAT, dims: ['batch_size', KV, 'total_sequence_length', hd] });
  }

  const valueInfo = (v: { name: string; elem: number; dims: (number | string)[] }) => ({
    name: v.name,
    type: { tensorType: { elemType: v.elem, shape: { dim: v.dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) } } },
  });
  const root = protobuf.Root.fromJSON(ONNX_PROTO);
  const Model = root.lookupType('onnx.ModelProto');
  const msg = Model.fromObject({
    irVersion: 7, producerName: 'branchpoint tools/onnx_llama.ts', opsetImport: [{ domain: '', version: 14 }],
    graph: { name: 'llama', node: nodes, initializer: inits, input: inputs.map(valueInfo), output: outputs.map(valueInfo) },
  });
  return Model.encode(msg).finish();
}
