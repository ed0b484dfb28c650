#!/usr/bin/env bash
# The device benchmark for a machine with a real GPU, in one call (< 10 minutes; the research checkpoints last, up to 5): our WebGPU engine
# against transformers.js WebGPU on the SmolLM-135M-shaped random Llama (bench/run-model.ts --gpu),
# prefill/decode ms, GFLOP/s and GB/s against the adapter's measured peaks, lens/forward, dispatches
# per decode step and per layer, our kernels against the previous ones (webgpu-prev); then stories260K's per-kernel decode profile (bench/run-browser.ts);
# then long-context decode with flash-decoding (split-K attention) against the one-pass kernel (bench/run-flash.ts);
# then, in Node (Dawn on the machine's Vulkan driver), f16 vs f32 arithmetic and subgroup vs tree reductions (bench/node_gpu.ts);
# then the research-size checkpoints (SmolLM2-135M, Qwen3-0.6B, Llama-3.2-1B, Gemma-3-1B; random weights, real
# configs, built on first use) from the mock Hub: time to loaded, GPU bytes against the estimate, time to the first
# 64-token lens heatmap (bench/load.ts --research --browser --gpu).
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
  timeout 300 npx tsx bench/load.ts --research --browser --gpu --models smollm2-135m,qwen3-0.6b,llama-3.2-1b,gemma-3-1b \
    --cases f16:f16,gguf-q4_0:f32,bf16:f16,bf16:q4_0 || echo "(research-checkpoint load bench skipped: $?)"
fi
