import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Plugin } from 'vite';

/** One model shipped as static files under public/models/<name>/ (see public/models/stories260K/README.md). */
export interface BundledModel {
  /** Folder name under models/, also the label shown in the model picker. */
  name: string;
  /** Licence named by the first line of the folder's LICENSE ("MIT License" → "MIT"), or null without one. */
  licence: string | null;
  /** Every file of the folder (relative to it) with its size in bytes: the service worker precaches them. */
  files: { path: string; bytes: number }[];
  /** Sum of the file sizes, bytes. */
  bytes: number;
}

/** The id the app imports the manifest from (declared in app/bundled-models.d.ts). */
export const MANIFEST_ID = 'virtual:bundled-models';

/**
 * The bundled models: every folder of `modelsDir` that holds a config.json, sorted by name. Read at
 * build time (and when the dev server starts), so the model list is static data in the app bundle,
 * identical in dev, in the build and on any static host — no server listing.
 */
export function scanBundledModels(modelsDir: string): BundledModel[] {
  if (!fs.existsSync(modelsDir)) return [];
  return fs.readdirSync(modelsDir).sort()
    .filter((name) => fs.existsSync(path.join(modelsDir, name, 'config.json')))
    .map((name) => {
      const dir = path.join(modelsDir, name);
      const files = fs.readdirSync(dir).sort()
        .filter((f) => fs.statSync(path.join(dir, f)).isFile())
        .map((f) => ({ path: f, bytes: fs.statSync(path.join(dir, f)).size }));
      const licenceFile = path.join(dir, 'LICENSE');
      const licence = fs.existsSync(licenceFile) ? fs.readFileSync(licenceFile, 'utf8').split('\n')[0].replace(/\s*License\s*$/i, '').trim() || null : null;
      return { name, licence, files, bytes: files.reduce((s, f) => s + f.bytes, 0) };
    });
}

/** Vite plugin: `import models from 'virtual:bundled-models'` gives scanBundledModels(public/models). */
export function bundledModels(publicDir: string): Plugin {
  const resolved = '\0' + MANIFEST_ID;
  return {
    name: 'branchpoint-bundled-models',
    resolveId: (id) => (id === MANIFEST_ID ? resolved : undefined),
    load: (id) => (id === resolved ? `export default ${JSON.stringify(scanBundledModels(path.join(publicDir, 'models')))};` : undefined),
  };
}
