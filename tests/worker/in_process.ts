import * as Comlink from 'comlink';
import type { InferenceApi } from '../../workers/protocol';

/** One message the worker posted back, with the transfer list it passed. */
export interface Posted { data: unknown; transfer: Transferable[] }

/**
 * Runs workers/inference.worker.ts in this process behind a real MessageChannel, so every call
 * crosses a structured-clone boundary exactly as it does between a page and a dedicated worker.
 * A dedicated worker's global scope is its message endpoint (Comlink.expose() listens on it);
 * here the global scope's addEventListener/postMessage are one port of the channel, set before the
 * worker module is imported. The other port is wrapped as the UI wraps the Worker.
 * @returns the remote API, every message the worker posted (with its transfer list), and close().
 */
export async function inProcessWorker(): Promise<{ api: Comlink.Remote<InferenceApi>; posted: Posted[]; close(): void }> {
  const { port1, port2 } = new MessageChannel();
  const posted: Posted[] = [];
  const scope = globalThis as unknown as Record<string, unknown>;
  scope.addEventListener = port1.addEventListener.bind(port1);
  scope.removeEventListener = port1.removeEventListener.bind(port1);
  scope.postMessage = (data: unknown, transfer: Transferable[] = []) => {
    posted.push({ data, transfer });
    port1.postMessage(data, transfer as never);
  };
  port1.start();
  await import('../../workers/inference.worker');
  const api = Comlink.wrap<InferenceApi>(port2 as unknown as Comlink.Endpoint);
  return {
    api, posted,
    close: () => {
      api[Comlink.releaseProxy]();
      port1.close();
      port2.close();
    },
  };
}
