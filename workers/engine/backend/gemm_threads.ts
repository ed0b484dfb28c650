/**
 * Threads for the CPU backend's WASM GEMM (wasm_gemm.ts): N − 1 helper threads (Node worker_threads,
 * or Web Workers from a blob URL in a browser) share the arena's WebAssembly memory and instance the
 * same module; each product is split by output columns (rows of w), the calling thread takes the
 * first share and the helpers the others, so every output element is computed by one thread with
 * the same kernel as on one thread: results are bit-identical for any thread count.
 *
 * Synchronisation is an i32 control block at the start of the shared memory (offsets CTL_I32 below
 * and CTL in tools/wasm/gemm_wat.ts): the caller writes the job and each thread's row range, marks
 * each helper's enrolled slot with the call's generation (members) or its complement (the others),
 * sets `pending`, bumps `generation` and Atomics.notify-s; helpers Atomics.wait on `generation`, run
 * `part(ctl, t)` in wasm when their slot holds the generation they woke for (joins()) and count
 * `pending` down; the caller does its share, then Atomics.wait-s
 * until `pending` is 0. A helper joins only once it has started (browsers start a worker only after
 * the creating thread returns to its event loop), so products never wait for a thread that is
 * still loading: until then they run on fewer threads.
 *
 * Needs SharedArrayBuffer, a shared WebAssembly.Memory and a thread that may block (Atomics.wait is
 * refused on a page's main thread; the engine runs in a worker). In a browser that means a
 * cross-origin isolated page (COOP same-origin + COEP require-corp, vite.config.ts).
 */

/** i32 indices in the control block; the job's kind, arguments and ranges are at CTL (gemm_wat.ts). */
const CTL_I32 = { generation: 0, pending: 1, kind: 2, helperParts: 12, failedParts: 13, ranges: 16, ready: 48, enrolled: 64 } as const;

/** Bytes of the control block (the arena's first resident block starts after it). */
export const CONTROL_BYTES = 512;

/** Most threads a pool runs (ranges at i32 16 .. 47 of the control block, ready flags at 48 .. 63, enrolled at 64 .. 79). */
export const MAX_THREADS = 16;

/**
 * Whether helper t, woken for generation `seen`, takes a share of that call: its enrolled slot holds
 * the generation of the call that enrolled it (run() writes `gen` for members and `~gen` for the
 * others, before bumping generation to gen). A flag (1 = in) is not enough: a helper left out of
 * call k that reads its flag late, after call k + 1 has written it but before that call bumps the
 * generation, would take call k + 1's share with a half-written job and count `pending` down before
 * it is set, then wake again for k + 1 and add its share a second time. HELPER applies the same
 * rule (JOINS, spliced into its text), so tests check the rule the helpers run.
 */
export function joins(ctl: Int32Array, t: number, seen: number): boolean {
  return Atomics.load(ctl, CTL_I32.enrolled + t) === seen;
}

/** joins()'s test in HELPER's text (E = CTL_I32.enrolled there). */
const JOINS = 'Atomics.load(ctl, E + t) === seen';

/** The helper's code, the same text in Node (eval worker) and browsers (blob URL worker). */
const HELPER = `
const G = ${CTL_I32.generation}, P = ${CTL_I32.pending}, K = ${CTL_I32.kind}, R = ${CTL_I32.ready}, H = ${CTL_I32.helperParts}, F = ${CTL_I32.failedParts};
const E = ${CTL_I32.enrolled};
function joins(ctl, t, seen) { return ${JOINS}; }
function start(d) {
  const ex = new WebAssembly.Instance(d.module, { env: { memory: d.memory } }).exports;
  const ctl = new Int32Array(d.memory.buffer, d.ctl, ${CONTROL_BYTES / 4});
  let seen = Atomics.load(ctl, G);
  Atomics.store(ctl, R + d.t, 1);
  for (;;) {
    Atomics.wait(ctl, G, seen);
    seen = Atomics.load(ctl, G);
    if (Atomics.load(ctl, K) < 0) break;
    if (joins(ctl, d.t, seen)) {
      try {
        ex.part(d.ctl, d.t);
        Atomics.add(ctl, H, 1);
      } catch {
        Atomics.add(ctl, F, 1);
      }
      if (Atomics.sub(ctl, P, 1) === 1) Atomics.notify(ctl, P);
    }
  }
  Atomics.store(ctl, R + d.t, 0);
}
if (typeof require === 'function') start(require('node:worker_threads').workerData);
else self.onmessage = (e) => { start(e.data); close(); };
`;

interface Helper { terminate(): unknown }
type NodeWorker = Helper & { unref(): void; on(event: 'error', f: (e: Error) => void): void };

/** Whether this thread may block in Atomics.wait (false on a browser page's main thread). */
function canBlock(): boolean {
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0);
    return true;
  } catch {
    return false;
  }
}

/** Node's worker_threads, reached without an import so the browser bundle never sees it. */
function nodeWorkers(): { Worker: new (src: string, o: { eval: true; workerData: unknown }) => NodeWorker } | null {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  return (proc?.getBuiltinModule?.('node:worker_threads') as ReturnType<typeof nodeWorkers>) ?? null;
}

/**
 * Whether threads are possible here: SharedArrayBuffer and Atomics.wait (a cross-origin isolated
 * page in a browser, or Node), and a way to start helpers.
 */
export function threadsAvailable(): boolean {
  if (typeof SharedArrayBuffer !== 'function' || typeof Atomics?.wait !== 'function') return false;
  if ((globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === false) return false;
  if (!nodeWorkers() && typeof Worker !== 'function') return false;
  return canBlock();
}

/** Threads to use by default: the machine's logical cores, at most 8 (1 where threads are unavailable). */
export function defaultThreads(): number {
  if (!threadsAvailable()) return 1;
  const os = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.('node:os') as { availableParallelism?: () => number; cpus(): unknown[] } | undefined;
  const cores = os ? (os.availableParallelism?.() ?? os.cpus().length) : (globalThis.navigator?.hardwareConcurrency ?? 1);
  return Math.max(1, Math.min(8, cores));
}

/** Stops the helpers of a pool: kind −1, no one enrolled, then a new generation wakes them to exit. */
function stopHelpers(ctl: Int32Array, helpers: Helper[]): void {
  for (let t = 0; t < MAX_THREADS; t++) Atomics.store(ctl, CTL_I32.enrolled + t, 0);
  Atomics.store(ctl, CTL_I32.kind, -1);
  Atomics.add(ctl, CTL_I32.generation, 1);
  Atomics.notify(ctl, CTL_I32.generation);
  for (const h of helpers) h.terminate();
}

/** Stops a pool whose arena was garbage-collected without dispose(). */
const orphans = new FinalizationRegistry<{ ctl: Int32Array; helpers: Helper[] }>(({ ctl, helpers }) => stopHelpers(ctl, helpers));

/** The helper threads of one arena. */
export class GemmThreads {
  private readonly ctl: Int32Array;
  private readonly helpers: Helper[] = [];
  private readonly started: Promise<void>;
  private stopped = false;
  /** Helpers that failed to start (their share goes to the others). */
  private failed = 0;
  /** Helpers kept out of the next products (tests: team compositions as when a helper has not started yet). */
  private readonly left = new Set<number>();

  /**
   * Starts threads − 1 helpers on `module` instanced over the shared `memory`, whose bytes
   * [0, CONTROL_BYTES) are the control block (zeroed here).
   * @param owner the object whose collection stops the helpers (the arena).
   * @throws Error when threads is outside [2, MAX_THREADS] or threads are unavailable here.
   */
  constructor(owner: object, module: WebAssembly.Module, memory: WebAssembly.Memory, readonly threads: number) {
    if (!(threads >= 2 && threads <= MAX_THREADS)) throw new Error(`GemmThreads: ${threads} threads, expected 2 … ${MAX_THREADS}`);
    this.ctl = new Int32Array(memory.buffer, 0, CONTROL_BYTES / 4);
    this.ctl.fill(0);
    const node = nodeWorkers();
    const url = node ? '' : URL.createObjectURL(new Blob([HELPER], { type: 'text/javascript' }));
    for (let t = 1; t < threads; t++) {
      const data = { module, memory, ctl: 0, t };
      if (node) {
        const w = new node.Worker(HELPER, { eval: true, workerData: data });
        w.unref(); // an idle pool never keeps Node alive
        w.on('error', () => { this.failed++; });
        this.helpers.push(w);
      } else {
        const w = new Worker(url);
        w.onerror = () => { this.failed++; };
        w.postMessage(data);
        this.helpers.push(w);
      }
    }
    this.started = new Promise<void>((resolve) => {
      const poll = () => (this.stopped || this.ready() + this.failed >= threads - 1 ? resolve() : setTimeout(poll, 5));
      poll();
    });
    orphans.register(owner, { ctl: this.ctl, helpers: this.helpers }, this);
  }

  /** Helpers that have started and wait for work (0 once stopped). */
  ready(): number {
    if (this.stopped) return 0;
    let n = 0;
    for (let t = 1; t < this.threads; t++) n += Atomics.load(this.ctl, CTL_I32.ready + t);
    return n;
  }

  /** Shares of products the helpers have computed so far (tests and benchmarks: proof they work). */
  helperParts(): number { return Atomics.load(this.ctl, CTL_I32.helperParts); }

  /** Resolves once every helper has started (products before that use the ones that have). */
  whenStarted(): Promise<void> { return this.started; }

  /**
   * Runs one product split by w rows: writes kind and args (9 i32, see CTL in gemm_wat.ts), gives
   * each started thread a range of about m / threads rows (multiples of 4), runs share 0 with
   * `part` on this thread and waits for the helpers.
   * @throws Error when a helper's share trapped (the product is then incomplete).
   */
  run(part: (ctl: number, t: number) => void, kind: number, args: readonly number[], m: number): void {
    const c = this.ctl;
    c[CTL_I32.kind] = kind;
    c.set(args, 3);
    // the generation this call will have: members' enrolled slots hold it, the others' its complement (joins())
    const gen = (Atomics.load(c, CTL_I32.generation) + 1) | 0;
    const team = [0];
    for (let t = 1; t < this.threads; t++) {
      const on = !this.stopped && !this.left.has(t) && Atomics.load(c, CTL_I32.ready + t) === 1;
      Atomics.store(c, CTL_I32.enrolled + t, on ? gen : ~gen);
      if (on) team.push(t);
    }
    const share = Math.ceil(m / team.length / 4) * 4;
    for (let t = 0; t < this.threads; t++) c[CTL_I32.ranges + 2 * t] = c[CTL_I32.ranges + 2 * t + 1] = 0;
    team.forEach((t, i) => {
      c[CTL_I32.ranges + 2 * t] = Math.min(m, i * share);
      c[CTL_I32.ranges + 2 * t + 1] = Math.min(m, (i + 1) * share);
    });
    Atomics.store(c, CTL_I32.pending, team.length - 1);
    if (team.length > 1) {
      Atomics.add(c, CTL_I32.generation, 1);
      Atomics.notify(c, CTL_I32.generation);
    }
    part(0, 0);
    for (let p = Atomics.load(c, CTL_I32.pending); p > 0; p = Atomics.load(c, CTL_I32.pending)) Atomics.wait(c, CTL_I32.pending, p);
    if (Atomics.load(c, CTL_I32.failedParts) > 0) {
      Atomics.store(c, CTL_I32.failedParts, 0);
      throw new Error('a CPU matmul thread failed (WebAssembly trap in its share of the product)');
    }
  }

  /**
   * Keeps helper t out of the products that follow (or lets it back in), as if it had not started:
   * tests force team compositions and shares with it. Call between products.
   */
  leaveOut(t: number, out = true): void {
    if (out) this.left.add(t); else this.left.delete(t);
  }

  /** Stops the helpers (idempotent). */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    orphans.unregister(this);
    stopHelpers(this.ctl, this.helpers);
  }
}
