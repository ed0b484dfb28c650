#!/usr/bin/env bash
# The device benchmark for a machine with a real GPU, in one call (< 5 minutes): our WebGPU engine
# against transformers.js WebGPU on the SmolLM-135M-shaped random Llama (bench/run-model.ts --gpu),
# prefill/decode ms, GFLOP/s and GB/s against the adapter's measured peaks, lens/forward, dispatches
# per decode step and per layer, our kernels against the previous ones (webgpu-prev); then stories260K's per-kernel decode profile (bench/run-browser.ts).
#   bench/gpu.sh                 # Chromium at /usr/bin/chromium (or $CHROMIUM_PATH) with a GPU
#   GPU_BENCH_ARGS="--t 64 --decode 32" bench/gpu.sh
# On a machine without a GPU, `bench/gpu.sh --swiftshader` runs the same script at small sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--swiftshader" ]]; then
  timeout 600 npx tsx bench/run-model.ts --layers 2 --t 8 --decode 4 --impls webgpu,webgpu-prev,tjs-webgpu ${GPU_BENCH_ARGS:-}
else
  timeout 240 npx tsx bench/run-model.ts --gpu --impls webgpu,webgpu-prev,tjs-webgpu,cpu ${GPU_BENCH_ARGS:-}
  timeout 60 npx tsx bench/run-browser.ts --reps 5 --decode 31 || echo "(stories260K profile skipped: $?)"
fi
