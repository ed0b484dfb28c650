/**
 * The CPU backend's name in every place that shows it: its description (the header badge, the
 * runner), the UI's backend menu, the README. It is the CPU backend (TypeScript + WASM SIMD kernels),
 * not a "reference"; "fallback" is said only when it runs because WebGPU is missing.
 */
export const CPU_BACKEND = 'CPU backend';
