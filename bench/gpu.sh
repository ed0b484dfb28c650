#!/usr/bin/env bash
# The device benchmark for a machine with a real GPU, in one call (< 5 minutes): our WebGPU engine
# against transformers.js WebGPU on the SmolLM-135M-shaped random Llama (bench/run-model.ts --gpu),
# prefill/decode ms, GFLOP/s and GB/s against the adapter's measured peaks, lens/forward, dispatches
# per decode step and per layer, our kernels against the previous ones (webgpu-prev); then stories260K's per-kernel decode profile (bench/run-browser.ts);
# then long-context decode with flash-decoding (split-K attention) against the one-pass kernel (bench/run-flash.ts);
# then, in Node (Dawn on the machine's Vulkan driver), f16 vs f32 arithmetic and subgroup vs tree reductions (bench/node_gpu.ts).
#   bench/gpu.sh                 # Chromium at /usr/bin/chromium (or $CHROMIUM_PATH) with a GPU
#   GPU_BENCH_ARGS="--t 64 --decode 32" bench/gpu.sh
# On a machine without a GPU, `bench/gpu.sh --swiftshader` runs the same script at small sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--swiftshader" ]]; then
  timeout 600 npx tsx bench/run-model.ts --layers 2 --t 8 --decode 4 --impls webgpu,webgpu-prev,tjs-webgpu ${GPU_BENCH_ARGS:-}
  timeout 300 npx tsx bench/run-flash.ts --layers 2 --t 512,2048 --reps 3
else
  timeout 240 npx tsx bench/run-model.ts --gpu --impls webgpu,webgpu-prev,tjs-webgpu,cpu ${GPU_BENCH_ARGS:-}
  timeout 60 npx tsx bench/run-browser.ts --reps 5 --decode 31 || echo "(stories260K profile skipped: $?)"
  timeout 90 npx tsx bench/run-flash.ts --gpu --layers 4 --t 512,1024,2048,4000 --reps 9 || echo "(flash-decoding bench skipped: $?)"
  timeout 60 npx tsx bench/node_gpu.ts --layers 8 --t 64 --decode 16 --reps 5 --tunings gpu || echo "(Node f16/subgroups bench skipped: $?)"
fi
