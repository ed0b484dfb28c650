import * as fs from 'node:fs';
import * as os from 'node:os';
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { CACHE_NAME, defaultCacheStorage, deleteCachedModel, listCachedModels, withCache } from '../../workers/engine/io/cache';
import { assertFits } from '../../workers/engine/model/estimate';
import { HubFiles } from '../../workers/engine/io/hub_files';
import { startMockHub } from '../../tools/mock-hub';
import { sharedPath } from '../shared';
import { MemoryCacheStorage } from './memory_cache';

/**
 * The Cache Storage layer: a second load of the same repo@revision makes no request at all (the
 * mock Hub is shut down before it), the token never reaches a key or the manifest, and the cache
 * manager lists and deletes models. Browser Cache Storage is replaced by an in-memory one here;
 * e2e/loading.spec.ts checks the real one.
 */

const DIR = sharedPath('fixtures', 'gemma2-tiny');
const TOKEN = 'hf_cacheSECRET987';
const CPU = { maxBufferSize: Infinity, maxStorageBufferBindingSize: Infinity, memoryBudget: 2 ** 30, device: 'test' };

/** What the worker does for a 'hub' source: HubFiles → cache → estimate → Engine.load. */
async function load(endpoint: string, storage: MemoryCacheStorage, token?: string): Promise<Engine> {
  const hub = new HubFiles('org/gemma', { endpoint, token });
  const files = await withCache(hub, { base: hub.url(''), endpoint: hub.endpoint, repo: hub.repo, revision: hub.revision }, storage.asCacheStorage());
  await assertFits(files, CPU);
  return Engine.load(files, new CpuBackend());
}

describe('model cache', () => {
  it('a second load of the same repo@revision is served entirely from the cache (server gone)', async () => {
    const storage = new MemoryCacheStorage();
    const hub = await startMockHub({ repos: { 'org/gemma': { revisions: { main: DIR } } } });
    const first = await load(hub.url, storage);
    const ids = first.encodePrompt({ prompt: 'The cat sat' });
    const want = (await first.run(ids)).logits;
    first.dispose();
    expect(hub.log.length).toBeGreaterThan(0);
    await hub.close();

    const second = await load(hub.url, storage);
    expect((await second.run(ids)).logits).toEqual(want);
    second.dispose();
  });

  it('keeps the token out of every cache key and the manifest', async () => {
    const storage = new MemoryCacheStorage();
    const hub = await startMockHub({ repos: { 'org/gemma': { revisions: { main: DIR }, token: TOKEN } } });
    try {
      (await load(hub.url, storage, TOKEN)).dispose();
      const cache = storage.caches.get(CACHE_NAME)!;
      expect(cache.entries.size).toBeGreaterThan(2);
      for (const [url, { body, headers }] of cache.entries) {
        expect(url).not.toContain(TOKEN);
        expect(JSON.stringify(headers)).not.toContain(TOKEN);
        if (url.endsWith('manifest')) expect(new TextDecoder().decode(body)).not.toContain(TOKEN);
      }
    } finally {
      await hub.close();
    }
  });

  it('lists cached models with their files and sizes, and deletes one so the next load downloads again', async () => {
    const storage = new MemoryCacheStorage();
    const hub = await startMockHub({ repos: { 'org/gemma': { revisions: { main: DIR } } } });
    try {
      (await load(hub.url, storage)).dispose();
      const [m, ...rest] = await listCachedModels(storage.asCacheStorage());
      expect(rest).toEqual([]);
      expect({ endpoint: m.endpoint, repo: m.repo, revision: m.revision }).toEqual({ endpoint: hub.url, repo: 'org/gemma', revision: 'main' });
      const names = m.files.map((f) => f.path).sort();
      expect(names).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json']));
      for (const f of m.files) expect(f.bytes).toBe(fs.statSync(`${DIR}/${f.path}`).size);
      expect(m.totalBytes).toBe(names.reduce((a, n) => a + fs.statSync(`${DIR}/${n}`).size, 0));

      expect(await deleteCachedModel('org/gemma', 'other-rev', undefined, storage.asCacheStorage())).toBe(0);
      expect(await deleteCachedModel('org/gemma', 'main', undefined, storage.asCacheStorage())).toBe(m.files.length + 1);
      expect(await listCachedModels(storage.asCacheStorage())).toEqual([]);
      const before = hub.log.length;
      (await load(hub.url, storage)).dispose();
      expect(hub.log.slice(before).some((r) => r.url.includes('model.safetensors') && r.status === 200)).toBe(true);
    } finally {
      await hub.close();
    }
  });

  it('a repo that failed before any file was stored (no config.json) is not listed as cached', async () => {
    const storage = new MemoryCacheStorage();
    const empty = fs.mkdtempSync(`${os.tmpdir()}/bp-empty-repo-`);
    const hub = await startMockHub({ repos: { 'org/empty': { revisions: { main: empty } } } });
    try {
      const h = new HubFiles('org/empty', { endpoint: hub.url });
      await expect((async () => {
        const files = await withCache(h, { base: h.url(''), endpoint: h.endpoint, repo: h.repo, revision: h.revision }, storage.asCacheStorage());
        await assertFits(files, CPU);
      })()).rejects.toThrow(/config\.json/);
      expect(await listCachedModels(storage.asCacheStorage())).toEqual([]);
    } finally {
      await hub.close();
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  it('still loads when the cache refuses to store (quota), downloading again next time', async () => {
    const storage = new MemoryCacheStorage();
    storage.full = true;
    const hub = await startMockHub({ repos: { 'org/gemma': { revisions: { main: DIR } } } });
    try {
      (await load(hub.url, storage)).dispose();
      expect(await listCachedModels(storage.asCacheStorage())).toEqual([]);
      const before = hub.log.length;
      (await load(hub.url, storage)).dispose();
      expect(hub.log.slice(before).some((r) => r.url.includes('model.safetensors') && r.status === 200)).toBe(true);
    } finally {
      await hub.close();
    }
  });

  it('is a pass-through where there is no Cache Storage (Node)', async () => {
    expect(defaultCacheStorage()).toBeNull();
    const hub = new HubFiles('org/gemma');
    expect(await withCache(hub, { base: hub.url(''), endpoint: hub.endpoint, repo: hub.repo, revision: hub.revision })).toBe(hub);
    expect(await listCachedModels()).toEqual([]);
  });
});
