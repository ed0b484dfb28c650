/**
 * The adapter's measured peaks, for the benchmarks' "fraction of peak": memory bandwidth from
 * buffer-to-buffer copies, and f32 arithmetic from a kernel of independent vec4 FMA chains.
 * Both are measured, not read from a spec sheet (WebGPU does not expose one).
 */

export interface GpuPeak {
  /** Copy bandwidth, counting the bytes read and written (GB/s). */
  copyGBs: number;
  /** f32 FMA throughput, 2 FLOP per FMA lane (GFLOP/s). */
  fmaGflops: number;
}

const FMA_WGSL = (iters: number) => /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> out: array<vec4f>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3u) {
  var a = vec4f(f32(g.x) * 1e-7, 1.0, 0.5, 0.25);
  var b = a + vec4f(0.1); var c = a + vec4f(0.2); var d = a + vec4f(0.3);
  let m = vec4f(0.9999); let k = vec4f(1e-4);
  for (var i = 0u; i < ${iters}u; i++) {
    a = fma(a, m, k); b = fma(b, m, k); c = fma(c, m, k); d = fma(d, m, k);
    a = fma(a, m, k); b = fma(b, m, k); c = fma(c, m, k); d = fma(d, m, k);
  }
  out[g.x] = a + b + c + d;
}`;

async function timeSubmit(device: GPUDevice, encode: (e: GPUCommandEncoder) => void, reps: number): Promise<number> {
  const run = async () => {
    const e = device.createCommandEncoder();
    encode(e);
    const t0 = performance.now();
    device.queue.submit([e.finish()]);
    await device.queue.onSubmittedWorkDone();
    return performance.now() - t0;
  };
  await run();
  const t: number[] = [];
  for (let i = 0; i < reps; i++) t.push(await run());
  return t.sort((x, y) => x - y)[0];
}

/**
 * Measures the peaks on `device`, sized by `scale` (1 for a real GPU: 256 MiB copies and 2^20
 * threads × 4096 FMAs; smaller for a CPU adapter such as SwiftShader).
 */
export async function measureGpuPeak(device: GPUDevice, scale = 1): Promise<GpuPeak> {
  const bytes = Math.min(Math.floor(256 * 2 ** 20 * scale / 16) * 16, Math.floor(device.limits.maxBufferSize / 16) * 16);
  const src = device.createBuffer({ size: bytes, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const dst = device.createBuffer({ size: bytes, usage: GPUBufferUsage.COPY_DST });
  const copies = 4;
  const copyMs = await timeSubmit(device, (e) => { for (let i = 0; i < copies; i++) e.copyBufferToBuffer(src, 0, dst, 0, bytes); }, 3);
  src.destroy(); dst.destroy();

  const iters = Math.max(16, Math.round(256 * scale));
  const groups = Math.max(16, Math.round(4096 * scale));
  const out = device.createBuffer({ size: groups * 256 * 16, usage: GPUBufferUsage.STORAGE });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code: FMA_WGSL(iters) }), entryPoint: 'main' } });
  const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: out } }] });
  const fmaMs = await timeSubmit(device, (e) => {
    const p = e.beginComputePass();
    p.setPipeline(pipeline);
    p.setBindGroup(0, bind);
    p.dispatchWorkgroups(Math.min(groups, 65535), Math.ceil(groups / 65535));
    p.end();
  }, 3);
  out.destroy();
  const flops = Math.min(groups, 65535) * Math.ceil(groups / 65535) * 256 * iters * 8 * 4 * 2;
  return { copyGBs: (2 * bytes * copies) / fmaSafe(copyMs) / 1e6, fmaGflops: flops / fmaSafe(fmaMs) / 1e6 };
}

const fmaSafe = (ms: number) => Math.max(ms, 1e-3);
