/**
 * Load benchmark: how long loading takes and how much memory it peaks at, for the same GPT-2
 * small-shaped checkpoint (124M parameters, random weights synthesised here in a temp dir, never
 * committed) stored as F32, F16 and BF16, on the CPU backend in Node.
 *
 *   npx tsx bench/load.ts [--runs 3]
 *
 * Each load runs in a fresh child process, so its peak resident memory (getrusage maxRSS) is its
 * own. Printed: read time (file → memory), decode + upload time (widen to f32, transpose, split),
 * total, peak RSS, RSS growth over the child's baseline, and F16/F32, BF16/F32 ratios.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { NodeFiles } from '../workers/engine/io/node_files';
import type { SafetensorsDtype } from '../workers/engine/io/safetensors';
import { loadTransformer } from '../workers/engine/model/load';
import { encodeSafetensors, type TensorToWrite } from '../tools/safetensors_write';

/** GPT-2 small (openai-community/gpt2 config.json). */
const CONFIG = {
  model_type: 'gpt2', n_embd: 768, n_layer: 12, n_head: 12, n_positions: 1024, vocab_size: 50257,
  activation_function: 'gelu_new', layer_norm_epsilon: 1e-5, bos_token_id: 50256, eos_token_id: 50256,
};
const DTYPES: SafetensorsDtype[] = ['F32', 'F16', 'BF16'];

interface ChildResult {
  readMs: number;
  decodeUploadMs: number;
  totalMs: number;
  /** Peak resident set size of the child, bytes. */
  peakRss: number;
  /** Peak RSS minus the RSS before the load began (imports, runtime), bytes. */
  peakGrowth: number;
  /** Bytes in ArrayBuffers still held after the load and a full GC (the float32 weights + KV cache). */
  arrayBuffersAfter: number;
}

/** GPT-2 small's tensors (HF names, Conv1D [in, out]) filled with N(0, 0.02²)-ish values from a seeded generator. */
function gpt2Tensors(): { name: string; shape: number[]; data: Float32Array }[] {
  const d = CONFIG.n_embd, f = 4 * d;
  const shapes: [string, number[]][] = [['wte.weight', [CONFIG.vocab_size, d]], ['wpe.weight', [CONFIG.n_positions, d]]];
  for (let l = 0; l < CONFIG.n_layer; l++) {
    const p = `h.${l}`;
    shapes.push(
      [`${p}.ln_1.weight`, [d]], [`${p}.ln_1.bias`, [d]],
      [`${p}.attn.c_attn.weight`, [d, 3 * d]], [`${p}.attn.c_attn.bias`, [3 * d]],
      [`${p}.attn.c_proj.weight`, [d, d]], [`${p}.attn.c_proj.bias`, [d]],
      [`${p}.ln_2.weight`, [d]], [`${p}.ln_2.bias`, [d]],
      [`${p}.mlp.c_fc.weight`, [d, f]], [`${p}.mlp.c_fc.bias`, [f]],
      [`${p}.mlp.c_proj.weight`, [f, d]], [`${p}.mlp.c_proj.bias`, [d]],
    );
  }
  shapes.push(['ln_f.weight', [d]], ['ln_f.bias', [d]]);
  let s = 0x9e3779b9;
  const rand = () => { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; return (s >>> 0) / 2 ** 32; };
  return shapes.map(([name, shape]) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    // Sum of three uniforms: a cheap bell shape, scaled to std 0.02.
    for (let i = 0; i < data.length; i++) data[i] = (rand() + rand() + rand() - 1.5) * 0.04;
    return { name, shape, data };
  });
}

/** Child mode: load the folder once and report timings and memory as JSON on stdout. */
async function child(dir: string): Promise<void> {
  const baseline = process.memoryUsage().rss;
  const t0 = performance.now();
  let tUpload = t0;
  const b = new CpuBackend();
  await loadTransformer(new NodeFiles(dir), b, (p) => { if (p.stage === 'upload') tUpload = performance.now(); });
  const t1 = performance.now();
  const peakRss = process.resourceUsage().maxRSS * 1024;
  (globalThis as { gc?: () => void }).gc?.();
  const out: ChildResult = {
    readMs: tUpload - t0, decodeUploadMs: t1 - tUpload, totalMs: t1 - t0,
    peakRss, peakGrowth: peakRss - baseline, arrayBuffersAfter: process.memoryUsage().arrayBuffers,
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}

function runChild(dir: string): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...process.execArgv, '--expose-gc', fileURLToPath(import.meta.url), '--child', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (c) => { out += c; });
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`child exited ${code}`))));
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;

async function main(): Promise<void> {
  const i = process.argv.indexOf('--runs');
  const runs = i > 0 ? Number(process.argv[i + 1]) : 3;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-bench-load-'));
  try {
    process.stdout.write(`synthesising GPT-2 small (random weights) in ${tmp} ...\n`);
    const tensors = gpt2Tensors();
    const params = tensors.reduce((a, t) => a + t.data.length, 0);
    const sizes: Record<string, number> = {};
    for (const dtype of DTYPES) {
      const dir = path.join(tmp, dtype);
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(CONFIG));
      const file = encodeSafetensors(tensors.map((t): TensorToWrite => ({ ...t, dtype })));
      fs.writeFileSync(path.join(dir, 'model.safetensors'), file);
      sizes[dtype] = file.length;
    }
    process.stdout.write(`${(params / 1e6).toFixed(1)}M parameters; ${runs} runs per dtype, each in a fresh process (CPU backend, Node ${process.version}, ${os.cpus().length} CPUs)\n\n`);
    const results: Record<string, ChildResult[]> = Object.fromEntries(DTYPES.map((d) => [d, []]));
    for (let r = 0; r < runs; r++) for (const dtype of DTYPES) results[dtype].push(await runChild(path.join(tmp, dtype)));

    const row = (dtype: string) => {
      const rs = results[dtype];
      return {
        file: mib(sizes[dtype]),
        'read ms': median(rs.map((x) => x.readMs)).toFixed(0),
        'decode+upload ms': median(rs.map((x) => x.decodeUploadMs)).toFixed(0),
        'total ms': median(rs.map((x) => x.totalMs)).toFixed(0),
        'peak RSS': mib(Math.max(...rs.map((x) => x.peakRss))),
        'peak growth': mib(Math.max(...rs.map((x) => x.peakGrowth))),
        'held after GC': mib(median(rs.map((x) => x.arrayBuffersAfter))),
      };
    };
    console.table(Object.fromEntries(DTYPES.map((d) => [d, row(d)])));
    const ratio = (d: string, f: (x: ChildResult) => number, agg: (xs: number[]) => number) =>
      (agg(results[d].map(f)) / agg(results.F32.map(f))).toFixed(2);
    for (const d of ['F16', 'BF16']) {
      process.stdout.write(`${d}/F32: file ${(sizes[d] / sizes.F32).toFixed(2)}, total time ${ratio(d, (x) => x.totalMs, median)}, ` +
        `read ${ratio(d, (x) => x.readMs, median)}, decode+upload ${ratio(d, (x) => x.decodeUploadMs, median)}, peak growth ${ratio(d, (x) => x.peakGrowth, (xs) => Math.max(...xs))}\n`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const childAt = process.argv.indexOf('--child');
await (childAt > 0 ? child(process.argv[childAt + 1]) : main());
