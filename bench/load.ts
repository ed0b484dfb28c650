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
 *
 * Research-size checkpoints (random weights, real configs: tools/research_checkpoints.ts, in the
 * storages of tools/research_storage.ts), loaded the way users load them:
 *
 *   npx tsx bench/load.ts --research [--browser] [--gpu] [--models smollm2-135m,qwen3-0.6b] [--cases f16:f32,gguf-q8_0:f32,bf16:q4_0] [--json out.json]
 *
 * Per checkpoint (--models: default SmolLM2-135M and Qwen3-0.6B; also llama-3.2-1b, gemma-3-1b),
 * file storage and the load's weight storage (--cases FILE:WEIGHTS; default: every storage the
 * model is written in, safetensors as float32 in Node and binary16 on WebGPU, plus Q8_0 / Q4_0
 * quantised on load where no GGUF exists): the time to loaded (Engine.load, warm-up
 * included on WebGPU), when each load stage began, the memory measured after the load and after the
 * first heatmap against the estimate the UI shows (model/estimate.ts; a GGUF folder, which the UI
 * cannot estimate, is estimated from its safetensors twin with the GGUF's storage), and the time to
 * the first lens heatmap (Engine.analyse of a 64-token prompt), with the load average beside each
 * row. Node: a fresh child process per case on the CPU backend (from the folder, NodeFiles; memory:
 * JS heap, ArrayBuffers, the WASM arena, peak RSS). --browser: Chromium (bench/load_page.ts,
 * WebGPU: SwiftShader here, a real GPU with --gpu) from the mock Hub (tools/mock-hub.ts), one
 * fresh page per case (memory: JS heap, GPU buffers the backend holds). JSON: .artifacts/bench/load-research.json.
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
import { startMockHub } from '../tools/mock-hub';
import { RESEARCH_STORAGES, researchFolder, researchSafetensors, type ResearchStorage } from '../tools/research_storage';
import type { ResearchModel } from '../tools/research_configs';
import { checkWeightDtype, type WeightDtype } from '../workers/engine/model/load';
import { withBenchPage } from './bench_page';
import type { PageLoadCase } from './load_page';
import { measureResearchLoad, type MemoryReading, type ResearchLoadCase, type ResearchLoadResult } from './research_load';

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

/** A research case with its folder on this machine. */
interface LocalCase extends ResearchLoadCase { dir: string; estimateDir: string; estimateDtype: WeightDtype }

const flagValue = (name: string): string | undefined => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : undefined; };

/**
 * The cases --models / --cases ask for, each folder built on first use.
 * @throws Error for an unknown model, a storage the model is not written in, or a weight storage the load does not accept.
 */
function researchCases(browser: boolean): LocalCase[] {
  const models = (flagValue('--models') ?? 'smollm2-135m,qwen3-0.6b').split(',') as ResearchModel[];
  const out: LocalCase[] = [];
  for (const model of models) {
    const storages = RESEARCH_STORAGES[model];
    if (!storages) throw new Error(`--models: "${model}" is not one of ${Object.keys(RESEARCH_STORAGES).join(', ')}`);
    const gguf = storages.filter((s) => s.startsWith('gguf-')), st = storages[0];
    const defaults = [`${st}:${browser ? 'f16' : 'f32'}`, ...(gguf.length ? gguf.map((s) => `${s}:f32`) : [`${st}:q8_0`, `${st}:q4_0`])];
    for (const pair of (flagValue('--cases') ?? defaults.join(',')).split(',')) {
      const [storage, w] = pair.split(':') as [ResearchStorage, string];
      if (!storages.includes(storage)) continue;
      const weights = checkWeightDtype(w ?? 'f32');
      const q = /^gguf-(q8_0|q4_0)$/.exec(storage)?.[1] as WeightDtype | undefined;
      out.push({ model, storage, weights, dir: researchFolder(model, storage), estimateDir: researchSafetensors(model), estimateDtype: q ?? weights });
    }
  }
  if (!out.length) throw new Error('no case to run: see --models and --cases at the top of bench/load.ts');
  return out;
}

/** Child mode of --research: one case on the CPU backend, its result as JSON on stdout. */
async function researchChild(c: LocalCase): Promise<void> {
  const backend = new CpuBackend();
  const gc = (globalThis as { gc?: () => void }).gc;
  const read = async (): Promise<MemoryReading> => {
    gc?.();
    const m = process.memoryUsage();
    return { jsHeap: m.heapUsed, arrayBuffers: m.arrayBuffers, wasm: backend.wasmMemoryBytes, gpu: 0, peakRss: process.resourceUsage().maxRSS * 1024 };
  };
  const files = new NodeFiles(c.dir);
  const estimateFiles = c.estimateDir === c.dir ? files : new NodeFiles(c.estimateDir);
  const r = await measureResearchLoad({ model: c.model, storage: c.storage, weights: c.weights }, files, estimateFiles, c.estimateDtype, backend, read);
  process.stdout.write(JSON.stringify(r) + '\n');
}

function runResearchChild(c: LocalCase): Promise<ResearchLoadResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...process.execArgv, '--expose-gc', fileURLToPath(import.meta.url), '--research-child', JSON.stringify(c)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (x) => { out += x; });
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`${c.model} ${c.storage}:${c.weights}: child exited ${code}`))));
  });
}

/** One row of the research table: the result and the 1-minute load average before and after it. */
interface ResearchRow { env: string; r: ResearchLoadResult; fileBytes: number; load: [number, number] }

const sec = (ms: number) => (ms / 1e3).toFixed(1);
const folderBytes = (dir: string) => fs.readdirSync(dir).filter((f) => /\.(safetensors|gguf)$/.test(f)).reduce((s, f) => s + fs.statSync(path.join(dir, f)).size, 0);

/** The table docs/performance.md quotes: one line per case, the load average beside it. */
function researchTable(rows: ResearchRow[]): string {
  const head = ['env', 'model', 'file', 'weights', 'file MiB', 'loaded s', 'estimate MiB (w + KV + act)', 'measured MiB', 'heatmap s', 'load avg'];
  const lines = rows.map(({ env, r, fileBytes, load }) => {
    const e = r.estimate;
    const m = r.memory.loaded, b = r.memory.before;
    const measured = env === 'node'
      ? `heap ${mib(m.jsHeap! - b.jsHeap!)}, arrays ${mib(m.arrayBuffers! - b.arrayBuffers!)} (wasm ${mib(m.wasm)}), peak RSS ${mib(m.peakRss!)}`
      : `GPU ${mib(m.gpu)} (${mib(r.memory.heatmap.gpu)} after heatmap), JS heap ${m.jsHeap === undefined ? '?' : mib(m.jsHeap - (b.jsHeap ?? 0))}`;
    return [env, r.model, r.storage, r.weights, mib(fileBytes).replace(' MiB', ''), sec(r.loadedMs),
      e ? `${mib(e.totalBytes)} (${mib(e.weightBytes)} + ${mib(e.kvCacheBytes)} + ${mib(e.activationBytes)})${r.estimateFrom === 'itself' ? '' : ' †'}` : '—',
      measured, `${sec(r.firstHeatmapMs)} (${r.nTokens} tok)`, `${load[0].toFixed(1)}–${load[1].toFixed(1)}`];
  });
  return [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`, ...lines.map((l) => `| ${l.join(' | ')} |`)].join('\n');
}

async function research(): Promise<void> {
  const browser = process.argv.includes('--browser'), gpu = process.argv.includes('--gpu');
  const cases = researchCases(browser);
  const rows: ResearchRow[] = [];
  const la = () => os.loadavg()[0];
  if (!browser) {
    for (const c of cases) {
      const before = la();
      const r = await runResearchChild(c);
      rows.push({ env: 'node', r, fileBytes: folderBytes(c.dir), load: [before, la()] });
      process.stdout.write(`${c.model} ${c.storage}:${c.weights}: loaded ${sec(r.loadedMs)} s, heatmap ${sec(r.firstHeatmapMs)} s\n`);
    }
  } else {
    const repos = Object.fromEntries(cases.flatMap((c) => [[`research/${path.basename(c.dir)}`, { revisions: { main: c.dir } }], [`research/${path.basename(c.estimateDir)}`, { revisions: { main: c.estimateDir } }]]));
    const hub = await startMockHub({ cors: true, repos });
    try {
      await withBenchPage({ html: 'load.html', fn: 'runLoadBench', port: 5194, gpu, ignore: /status of 404/, args: ['--enable-precise-memory-info', '--js-flags=--expose-gc'] }, async (page) => {
        for (const c of cases) {
          await page.reload({ timeout: 180_000 });
          await page.waitForFunction(() => typeof window.runLoadBench === 'function', undefined, { timeout: 120_000 });
          const pc: PageLoadCase = { model: c.model, storage: c.storage, weights: c.weights, repo: `research/${path.basename(c.dir)}`, estimateRepo: `research/${path.basename(c.estimateDir)}`, estimateDtype: c.estimateDtype };
          const before = la();
          // Vite may reload the page once while it optimises dependencies on a cold start: run the case again then
          const run = () => page.evaluate(([u, x]) => window.runLoadBench(u, x), [hub.url, pc] as const);
          const r = await run().catch(async (e: Error) => {
            if (!/Execution context was destroyed/.test(e.message)) throw e;
            await page.waitForFunction(() => typeof window.runLoadBench === 'function', undefined, { timeout: 120_000 });
            return run();
          });
          rows.push({ env: gpu ? 'chromium-gpu' : 'chromium', r, fileBytes: folderBytes(c.dir), load: [before, la()] });
          process.stdout.write(`${c.model} ${c.storage}:${c.weights}: loaded ${sec(r.loadedMs)} s, heatmap ${sec(r.firstHeatmapMs)} s (${r.backend})\n`);
        }
      });
    } finally {
      await hub.close();
    }
  }
  const json = path.resolve(flagValue('--json') ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '.artifacts', 'bench', `load-research-${browser ? (gpu ? 'gpu' : 'chromium') : 'node'}.json`));
  fs.mkdirSync(path.dirname(json), { recursive: true });
  fs.writeFileSync(json, JSON.stringify(rows, null, 2));
  process.stdout.write(`\n${new Date().toISOString().slice(0, 16)} UTC, ${os.cpus().length} CPUs; † estimated from the binary16 safetensors with the GGUF's storage (the UI estimates safetensors only)\n${researchTable(rows)}\n\nfull result: ${path.relative(process.cwd(), json)}\n`);
}

const childAt = process.argv.indexOf('--child');
const researchAt = process.argv.indexOf('--research-child');
await (childAt > 0 ? child(process.argv[childAt + 1]) : researchAt > 0 ? researchChild(JSON.parse(process.argv[researchAt + 1]) as LocalCase) : process.argv.includes('--research') ? research() : main());
