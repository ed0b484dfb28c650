/**
 * SAE benchmark: a Gemma-Scope-sized SAE (d_in 2304, d_sae 16384, random weights built in the page)
 * on WebGPU in Chromium — its memory estimate against the GPU bytes it holds, load time, the time
 * to encode + decode 128 positions, and a 128-token prompt through a host model with the SAE
 * attached at blocks.0.hook_resid_post against the same forward without it — printed with the load
 * average (no assertions). The host is a random Llama with d_model = d_in (Gemma 2 2B's width:
 * 9 heads of 256, 3 KV heads, d_mlp 4608) and --layers blocks (default 1), built once under
 * .artifacts/bench/ (never committed; stories260K's tokenizer, ids < 512).
 *
 *   npx tsx bench/run-sae.ts [--reps 3] [--tokens 128] [--d-sae 16384] [--d-in 2304] [--layers 1] [--gpu]
 *
 * Starts its own Vite dev server and Chromium (/usr/bin/chromium or $CHROMIUM_PATH, WebGPU flags
 * of ../shared/TESTING.md; --gpu adds the Vulkan flags of bench/run-model.ts for a real GPU) and
 * closes both. The JSON goes to .artifacts/bench/sae.json.
 */
import { chromium } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'vite';
import type { SaeBenchOptions, SaeBenchResult } from './sae_browser';
import { benchModels } from './serve_models';
import { smolLM135MRandom, SMOLLM_135M } from './smollm_random';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const ARGS = ['--enable-unsafe-webgpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-sandbox'];

function options(argv: string[]): Omit<SaeBenchOptions, 'hostUrl'> & { layers: number; gpu: boolean } {
  const o = { dIn: 2304, dSae: 16384, tokens: 128, reps: 3, layers: 1, gpu: false };
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--gpu') { o.gpu = true; i--; continue; }
    const n = Number(argv[i + 1]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${argv[i]} needs a positive integer`);
    const key = ({ '--reps': 'reps', '--tokens': 'tokens', '--d-sae': 'dSae', '--d-in': 'dIn', '--layers': 'layers' } as const)[argv[i] as '--reps'];
    if (!key) throw new Error(`unknown argument ${argv[i]} (see bench/run-sae.ts)`);
    o[key] = n;
  }
  if (o.dIn % 256 !== 0) throw new Error(`--d-in ${o.dIn}: the host model uses heads of 256, so d_in must be a multiple of 256`);
  return o;
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

const { layers, gpu, ...opts } = options(process.argv.slice(2));
const nHeads = opts.dIn / 256;
const hostConfig = { ...SMOLLM_135M, hidden_size: opts.dIn, intermediate_size: 2 * opts.dIn, num_hidden_layers: layers, num_attention_heads: nHeads, num_key_value_heads: nHeads % 3 === 0 ? nHeads / 3 : nHeads, vocab_size: 512, max_position_embeddings: 2048 };
const hostDir = smolLM135MRandom(path.join(ROOT, '.artifacts', 'bench', `sae-host-d${opts.dIn}-${layers}l`), hostConfig);
const server = await createServer({ root: ROOT, configFile: path.join(ROOT, 'vite.config.ts'), logLevel: 'warn', plugins: [benchModels(path.join(ROOT, '.artifacts', 'bench'))], server: { host: '127.0.0.1', port: 5181, strictPort: false } });
await server.listen();
const gpuArgs = gpu ? ['--enable-features=Vulkan', '--use-vulkan=native', '--use-angle=vulkan', '--ignore-gpu-blocklist', '--disable-vulkan-surface'] : [];
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: [...ARGS, ...gpuArgs] });
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(`${server.resolvedUrls!.local[0]}bench/sae.html`);
  await page.waitForFunction(() => typeof window.runSaeBench === 'function');
  const loadBefore = load();
  const o: SaeBenchOptions = { ...opts, hostUrl: `${server.resolvedUrls!.local[0]}bench-models/${path.basename(hostDir)}/` };
  const r: SaeBenchResult = await page.evaluate((x) => window.runSaeBench(x), o);
  const loadAfter = load();
  const sorted = [...r.encodeMs].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  console.log(`adapter: ${r.adapter}`);
  console.log(`SAE d_in ${o.dIn} × d_sae ${o.dSae} (random JumpReLU), ${o.tokens} positions, ${o.reps} reps`);
  console.log(`memory estimate (assertSaeFits, ${mib(r.estimateBytes)} with 512-token activations; ${mib(r.estimateForTokens.totalBytes)} for ${o.tokens} tokens: weights ${mib(r.estimateForTokens.weightBytes)} + activations ${mib(r.estimateForTokens.activationBytes)})`);
  const held = r.loadedBytes + r.peakEncodeBytes;
  console.log(`GPU bytes after load ${mib(r.loadedBytes)} (${(r.loadedBytes / r.estimateForTokens.weightBytes).toFixed(5)}× the weight estimate: buffers are pooled in size classes); extra during encode ${mib(r.peakEncodeBytes)} (${(r.peakEncodeBytes / r.estimateForTokens.activationBytes).toFixed(5)}× the activation estimate)`);
  console.log(`load + encode hold ${mib(held)} = ${(held / r.estimateBytes).toFixed(3)}× the estimate the SAE was admitted with (${mib(r.estimateBytes)}): ${held <= r.estimateBytes ? 'within it' : 'OVER it'}`);
  console.log(`load ${r.loadMs.toFixed(0)} ms · encode+decode of ${o.tokens} positions: median ${median.toFixed(0)} ms (all: ${r.encodeMs.map((x) => x.toFixed(0)).join(', ')}) · ${((2 * 2 * o.tokens * o.dIn * o.dSae) / (median / 1000) / 1e9).toFixed(2)} GFLOP/s · mean L0 ${r.meanL0.toFixed(1)}`);
  const fwd = [...r.forwardMs].sort((a, b) => a - b)[Math.floor(r.forwardMs.length / 2)];
  const fwdSae = [...r.forwardSaeMs].sort((a, b) => a - b)[Math.floor(r.forwardSaeMs.length / 2)];
  console.log(`host: random Llama, ${r.host.nLayers} layer(s), d_model ${r.host.dModel}, ${mib(r.host.bytes)} on the GPU (reserved when the SAE was sized)`);
  console.log(`${o.tokens}-token prompt: forward ${fwd.toFixed(0)} ms, with the SAE attached at ${'blocks.0.hook_resid_post'} capturing hook_sae_acts_post ${fwdSae.toFixed(0)} ms (${(fwdSae / fwd).toFixed(2)}× the forward; all: ${r.forwardMs.map((x) => x.toFixed(0)).join(', ')} / ${r.forwardSaeMs.map((x) => x.toFixed(0)).join(', ')}) · mean L0 on the prompt ${r.promptL0.toFixed(1)}`);
  console.log(`load average (1/5/15 min): before ${loadBefore}, after ${loadAfter} (${os.cpus().length} CPUs)`);
  fs.mkdirSync(path.join(ROOT, '.artifacts', 'bench'), { recursive: true });
  fs.writeFileSync(path.join(ROOT, '.artifacts', 'bench', 'sae.json'), JSON.stringify({ ...r, loadBefore, loadAfter }, null, 1));
} finally {
  await browser.close();
  await server.close();
}
