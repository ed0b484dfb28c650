/// <reference lib="webworker" />
/**
 * The service worker that makes the built static site work offline (DESIGN.md §2 "Models"): Workbox
 * precaches the app shell (HTML, JS, CSS, the worker, the prepared decks and steering sets) and the
 * bundled models' files, listed at build time by vite-plugin-pwa (`self.__WB_MANIFEST`, see
 * vite.config.ts), and answers from that cache before the network. Hub models are not its business:
 * the inference worker keeps them in its own Cache Storage (workers/engine/io/cache.ts).
 *
 * The engine reads model files with HEAD (has/size) and Range requests (safetensors headers), which a
 * precache route (GET only, whole files) does not answer; `headFromPrecache` answers HEAD from the
 * precached file, and a Range GET gets the whole precached file (200), which HttpFiles accepts.
 * Scope: the folder sw.js is served from, so the site works under any sub-path.
 */
import { cleanupOutdatedCaches, matchPrecache, precacheAndRoute } from 'workbox-precaching';
import { registerRoute } from 'workbox-routing';

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: (string | { url: string; revision: string | null })[] };

precacheAndRoute(self.__WB_MANIFEST);
cleanupOutdatedCaches();

/**
 * HEAD for a precached file: its status and headers, with Content-Length set from the stored body
 * (HttpFiles.size reads it). A file not in the precache goes to the network; with the network off
 * that is a 504 — an absent optional file (model.safetensors.index.json) then reads as absent.
 */
async function headFromPrecache({ request }: { request: Request }): Promise<Response> {
  const hit = await matchPrecache(request.url);
  if (hit) {
    const headers = new Headers(hit.headers);
    headers.set('content-length', String((await hit.blob()).size));
    return new Response(null, { status: 200, headers });
  }
  try {
    return await fetch(request);
  } catch {
    return new Response(null, { status: 504, statusText: 'offline and not cached' });
  }
}
registerRoute(({ url }) => url.origin === self.location.origin, headFromPrecache, 'HEAD');

// A new version takes over at once: the shell is precached whole, so no page mixes two versions' files for long.
self.addEventListener('install', () => { void self.skipWaiting(); });
self.addEventListener('activate', (e) => { e.waitUntil(self.clients.claim()); });
