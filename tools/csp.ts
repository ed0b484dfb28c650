/**
 * The Content-Security-Policy the built site runs under (issue #8), as a <meta> tag Vite writes
 * into dist/index.html (a static host needs no header configuration). Dev mode is left without it:
 * Vite's dev client and React refresh inject inline scripts.
 * - script-src 'self' 'wasm-unsafe-eval': our bundles only; WebAssembly compilation allowed (tokenizer
 *   and ONNX backends), no eval, no inline script.
 * - worker-src 'self' blob:: the inference worker (a bundled module) and blob workers.
 * - connect-src 'self' https: http:: the bundled model, the Hub (and its CDN redirects) and
 *   self-hosted mirrors, which may be plain http on a lab network (the UI warns before sending a
 *   token there).
 * - img-src 'self' data: blob:: PNG/SVG exports drawn through blob and data URLs.
 * - style-src 'self' 'unsafe-inline': React style attributes and D3 inline styles.
 * - object-src 'none'; base-uri 'self'; form-action 'none'.
 */
import type { Plugin } from 'vite';

export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self' blob:",
  "connect-src 'self' https: http:",
  "img-src 'self' data: blob:",
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'none'",
].join('; ');

/** Vite plugin: adds the CSP meta tag to index.html at build time. */
export function contentSecurityPolicy(): Plugin {
  return {
    name: 'branchpoint-csp',
    apply: 'build',
    transformIndexHtml: () => [{ tag: 'meta', attrs: { 'http-equiv': 'Content-Security-Policy', content: CSP }, injectTo: 'head-prepend' }],
  };
}
