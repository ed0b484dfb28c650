import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hfToGguf } from '../../tools/gguf_write';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { openGguf } from '../../workers/engine/io/gguf';
import { loadTransformer, type WeightDtype } from '../../workers/engine/model/load';
import { runCaptured } from '../model_run';
import { maxAbsDiff, readReference, sharedPath } from '../shared';

/**
 * Mixtral as llama.cpp writes it (tools/gguf_write.ts, at test time from the mixtral-tiny fixture):
 * "llama" with llama.expert_count, the router ffn_gate_inp and the experts stacked into
 * ffn_{gate,up,down}_exps [n_experts, rows, cols]. io/gguf.ts splits the stacks back into HF's
 * per-expert matrices. F32: HF's logits (≤ 1e-4) and router logits (≤ 1e-5) at every position of
 * the three sequences; Q8_0 / Q4_0: the same logits as the safetensors quantised on load (the same
 * blocks), far from float32.
 */
const dir = sharedPath('fixtures-moe', 'mixtral-tiny');
const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { name: string; input_ids: number[] }[] };
const config = JSON.parse(fs.readFileSync(`${dir}/config.json`, 'utf8')) as { num_hidden_layers: number; num_local_experts: number };

function folder(withGguf: Uint8Array | null): MemoryFiles {
  const files = new Map<string, Uint8Array>();
  const names = withGguf ? ['tokenizer.json', 'tokenizer_config.json'] : ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];
  for (const f of names) files.set(f, new Uint8Array(fs.readFileSync(`${dir}/${f}`)));
  if (withGguf) files.set('model.gguf', withGguf);
  return new MemoryFiles(withGguf ? 'gguf' : 'safetensors', files);
}

async function run(files: MemoryFiles, ids: number[], hooks: string[] = [], weightDtype: WeightDtype = 'f32') {
  const b = new CpuBackend();
  try {
    const { model, config: c } = await loadTransformer(files, b, undefined, { weightDtype });
    return { ...(await runCaptured(b, model, ids, hooks)), config: c };
  } finally {
    b.dispose();
  }
}

describe('GGUF stacked experts (Mixtral)', () => {
  it('the file holds stacked experts only: 3-D ffn_*_exps, no per-expert tensors; the config comes back as mixtral', async () => {
    const bytes = hfToGguf(dir, 'q8_0');
    const text = new TextDecoder('latin1').decode(bytes.subarray(0, 16384));
    expect(text).toContain('blk.0.ffn_gate_exps.weight');
    expect(text).toContain('blk.2.ffn_down_exps.weight');
    expect(text).not.toContain('experts.');
    const ck = await openGguf(folder(bytes));
    expect(ck.config).toMatchObject({ model_type: 'mixtral', num_local_experts: 4, num_experts_per_tok: 2 });
    // Q8_0 for the 3 stacks × 3 layers, F32 for the routers and norms
    expect(ck.types.Q8_0).toBe(3 * config.num_hidden_layers + 4 * config.num_hidden_layers);
    expect(ck.source.names().filter((n) => /experts\.\d+\./.test(n)).length).toBe(3 * config.num_hidden_layers * config.num_local_experts);
  });

  it('F32: HF logits (≤ 1e-4) and router logits (≤ 1e-5) at every position of the three sequences', async () => {
    const gguf = folder(hfToGguf(dir, 'f32'));
    const hooks = Array.from({ length: config.num_hidden_layers }, (_, l) => `blocks.${l}.mlp.hook_router_logits`);
    let lg = 0, rl = 0;
    for (const s of meta.sequences) {
      const ref = readReference(`${dir}/reference/${s.name}.safetensors`);
      const { logits, captured, config: c } = await run(gguf, s.input_ids, hooks);
      expect(c.model_type).toBe('mixtral');
      lg = Math.max(lg, maxAbsDiff(logits, ref.get('logits')!.data));
      const r = ref.get('router_logits')!.data, per = r.length / hooks.length;
      hooks.forEach((h, l) => { rl = Math.max(rl, maxAbsDiff(captured.get(h)!, r.subarray(l * per, (l + 1) * per))); });
    }
    expect(lg).toBeLessThanOrEqual(1e-4);
    expect(rl).toBeLessThanOrEqual(1e-5);
  });

  it.each(['q8_0', 'q4_0'] as const)('%s: the same logits as the safetensors quantised on load, and far from float32', async (format) => {
    const s = meta.sequences[0];
    const fromGguf = await run(folder(hfToGguf(dir, format)), s.input_ids);
    const onLoad = await run(folder(null), s.input_ids, [], format);
    expect(maxAbsDiff(fromGguf.logits, onLoad.logits)).toBeLessThan(1e-5);
    expect(maxAbsDiff(fromGguf.logits, readReference(`${dir}/reference/${s.name}.safetensors`).get('logits')!.data)).toBeGreaterThan(1e-3);
  });
});
