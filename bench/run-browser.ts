/**
 * Browser benchmark runner: stories260K on our WebGPU backend (SwiftShader here), our CPU backend
 * and transformers.js (onnxruntime-web wasm, fp32, ../shared/models/stories260K/onnx/model.onnx),
 * measured in one run in one Chromium tab by bench/browser.ts, printed as a table with ratios.
 *
 *   npx tsx bench/run-browser.ts [--reps 7] [--warmup 2] [--decode 31] [--url http://host:port/] [--json out.json]
 *   npm run bench:browser -- --reps 11
 *
 * Starts its own Vite dev server (vite.config.ts, which serves ../shared/models under /models/) and
 * closes it at the end, unless --url names a running one to reuse. (Servers other runs started are
 * not picked up by themselves: they may stop in the middle of the benchmark.)
 * Chromium is /usr/bin/chromium (or $CHROMIUM_PATH) with the WebGPU flags of ../shared/TESTING.md.
 * The full JSON result goes to .artifacts/bench/browser.json (or --json).
 */
import { chromium } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type ViteDevServer } from 'vite';
import type { BenchOptions, BenchResult } from './browser';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const PAGE = 'bench/browser.html';
const CHROMIUM_ARGS = ['--enable-unsafe-webgpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-sandbox'];

interface Args extends BenchOptions {
  url: string | null;
  json: string;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { reps: 7, warmup: 2, nDecode: 31, url: null, json: path.join(ROOT, '.artifacts', 'bench', 'browser.json') };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1];
    const int = (name: string) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${name} needs a positive integer, got "${v}"`);
      i++;
      return n;
    };
    switch (argv[i]) {
      case '--reps': a.reps = int('--reps'); break;
      case '--warmup': a.warmup = int('--warmup'); break;
      case '--decode': a.nDecode = int('--decode'); break;
      case '--url': a.url = v.replace(/\/?$/, '/'); i++; break;
      case '--json': a.json = path.resolve(v); i++; break;
      default: throw new Error(`unknown argument "${argv[i]}" (see the comment at the top of bench/run-browser.ts)`);
    }
  }
  return a;
}

/** True when `base` serves this benchmark page (not Vite's SPA fallback to index.html). */
async function servesPage(base: string): Promise<boolean> {
  try {
    const r = await fetch(base + PAGE, { signal: AbortSignal.timeout(2000) });
    return r.ok && (await r.text()).includes('runBench');
  } catch {
    return false;
  }
}

/** The dev server's base URL, and the server when this process started it. */
async function devServer(url: string | null): Promise<{ base: string; server: ViteDevServer | null }> {
  if (url) {
    if (!(await servesPage(url))) throw new Error(`${url}${PAGE} is not the benchmark page: is that a Vite dev server of this repository?`);
    return { base: url, server: null };
  }
  const server = await createServer({ root: ROOT, configFile: path.join(ROOT, 'vite.config.ts'), logLevel: 'warn', server: { host: '127.0.0.1', port: 5180, strictPort: false } });
  await server.listen();
  const base = server.resolvedUrls?.local[0];
  if (!base) throw new Error('the Vite dev server started but reported no local URL');
  return { base, server };
}

const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const row = (cells: string[], widths: number[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');

/** The printed report: times, ratios from this run, the WebGPU profile and the greedy check. */
function report(r: BenchResult, load: { before: number; after: number }): string {
  const { webgpu, cpu, transformersjs: hf } = r.impls;
  const o = r.options, p = r.webgpuProfile;
  const out: string[] = [];
  out.push(`stories260K · prompt "${r.prompt}" (${r.nPromptTokens} tokens) · ${o.nDecode} greedy decode steps · median of ${o.reps} after ${o.warmup} warm-up`);
  out.push(`${r.adapter} · ${r.where} · crossOriginIsolated ${r.crossOriginIsolated}, onnxruntime-web wasm threads ${r.ortThreads ?? '?'}, ${r.hardwareConcurrency} logical CPUs`);
  out.push(`host load average (1 min) ${load.before.toFixed(1)} before, ${load.after.toFixed(1)} after: other processes share these CPUs with SwiftShader and wasm`);
  out.push('');
  const w1 = [34, 8, 9, 16, 13, 22, 15];
  out.push(row(['times (ms)', 'load', 'prefill', 'decode / token', 'median step', 'step min–max', `generate(${o.nDecode + 1})`], w1));
  const impl = (name: string, t: typeof webgpu) => row([name, ms(t.loadMs), ms(t.prefillMs), ms(t.decodeMsPerToken), ms(t.decodeStepMedianMs), `${ms(t.decodeStepMinMs)}–${ms(t.decodeStepMaxMs)}`, ms(t.generateMs)], w1);
  out.push(impl('engine, WebGPU backend', webgpu), impl('engine, CPU backend', cpu), impl('transformers.js (onnxruntime wasm)', hf));
  out.push('');
  const w2 = [34, 9, 15];
  out.push(row(['ratios (this run; <1 = faster)', 'prefill', 'decode / token'], w2));
  out.push('  decode / token = mean step time; generate() adds an event-loop yield and token decoding per step');
  for (const [name, a, b] of [['WebGPU / CPU', webgpu, cpu], ['WebGPU / transformers.js', webgpu, hf], ['CPU / transformers.js', cpu, hf]] as const) {
    out.push(row([name, ratio(a.prefillMs, b.prefillMs), ratio(a.decodeMsPerToken, b.decodeMsPerToken)], w2));
  }
  out.push('');
  const w3 = [34, 9, 10, 9, 14, 16];
  out.push(row(['analysis (ms)', 'forward', 'lens grid', 'analyse', 'lens / forward', 'analyse / forward'], w3));
  for (const [name, a] of [['engine, WebGPU backend', r.analysis.webgpu], ['engine, CPU backend', r.analysis.cpu]] as const) {
    out.push(row([name, ms(a.forwardMs), ms(a.lensMs), ms(a.analyseMs), ratio(a.lensMs, a.forwardMs), ratio(a.analyseMs, a.forwardMs)], w3));
  }
  out.push('  forward = Engine.run(ids), no captures, all logit rows; lens grid = forward capturing the L+1 residuals +');
  out.push('  LN_f·W_U, log-softmax and gather on the (L+1)·T stack; analyse = Engine.analyse (lens, top-k, norms, sinks, sequence margin)');
  out.push('');
  out.push('WebGPU decode step, where the time goes:');
  out.push(`  ${p.dispatchesPerDecodeStep} dispatches, ${p.submitsPerDecodeStep} submit(s), ${p.readsPerDecodeStep} read-back(s) per step (prefill: ${p.dispatchesPerPrefill} dispatches)`);
  out.push(`  submit + mapAsync round trip ${ms(p.roundTripMs)} ms; a trivial dispatch (add [1,64]) ${ms(p.perDispatchAddMs)} ms`);
  out.push(`  overhead model (round trips + dispatches × trivial dispatch) ${ms(p.overheadModelMs)} ms vs measured ${ms(webgpu.decodeMsPerToken)} ms per token`);
  out.push(`  kernels of one step, replayed one kernel at a time (sum ${ms(p.kernelSumMs)} ms):`);
  for (const k of p.kernels) out.push(`    ${k.kernel.padEnd(28)} ×${String(k.dispatches).padEnd(4)} ${ms(k.msPerStep).padStart(7)} ms  ${((100 * k.msPerStep) / p.kernelSumMs).toFixed(0).padStart(3)} %`);
  out.push(`  ${p.mflopPerDecodeToken.toFixed(2)} MFLOP per token → ${(p.achievedGflops * 1000).toFixed(1)} MFLOP/s achieved`);
  out.push('');
  const n = webgpu.greedy.length - r.nPromptTokens;
  if (r.greedyAgree) {
    out.push(`greedy tokens: all three agree on ${n} new tokens${r.referenceGreedy ? ' and match the golden reference' : ''}: ${JSON.stringify(r.greedyText)}`);
  } else {
    out.push(`greedy tokens DIFFER: ${r.greedyMismatches.join('; ')}`);
  }
  return out.join('\n');
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const { base, server } = await devServer(args.url);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage();
    // 404s are expected: HttpFiles.has() probes for optional files (sharded index, chat template).
    page.on('console', (m) => { if ((m.type() === 'error' || m.type() === 'warning') && !/status of 404/.test(m.text())) console.error(`[page ${m.type()}] ${m.text()}`); });
    page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
    await page.goto(base + PAGE);
    await page.waitForFunction(() => typeof window.runBench === 'function');
    const options: BenchOptions = { reps: args.reps, warmup: args.warmup, nDecode: args.nDecode };
    const before = os.loadavg()[0];
    const result = await page.evaluate((o) => window.runBench(o), options);
    const load = { before, after: os.loadavg()[0] };
    fs.mkdirSync(path.dirname(args.json), { recursive: true });
    fs.writeFileSync(args.json, JSON.stringify(result, null, 2));
    console.log(report(result, load));
    console.log(`\nfull result: ${path.relative(process.cwd(), args.json)}`);
    if (!result.greedyAgree) process.exitCode = 1;
  } finally {
    await browser.close();
    await server?.close();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
