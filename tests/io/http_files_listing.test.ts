/**
 * HttpFiles with a listing (a bundled model's build-time manifest, issue 29 item 9): has() and
 * size() answer from it without a request, so a fresh open asks for no file the folder lacks
 * (model.safetensors.index.json, model.gguf) and sends no HEAD; bytes() still fetches.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HttpFiles } from '../../workers/engine/io/model_files';

afterEach(() => { vi.unstubAllGlobals(); });

describe('HttpFiles with the manifest listing', () => {
  it('answers has() and size() from the listing, with no request', async () => {
    const fetch = vi.fn(async () => new Response(new Uint8Array([1, 2, 3])));
    vi.stubGlobal('fetch', fetch);
    const files = new HttpFiles('stories260K', 'http://x/models/stories260K/', {}, new Map([['config.json', 10], ['model.safetensors', 1000]]));
    expect(await files.has('model.safetensors.index.json')).toBe(false);
    expect(await files.has('model.gguf')).toBe(false);
    expect(await files.has('config.json')).toBe(true);
    expect(await files.size('model.safetensors')).toBe(1000);
    expect(fetch).not.toHaveBeenCalled();
    expect(Array.from(await files.bytes('config.json'))).toEqual([1, 2, 3]);
    expect(fetch).toHaveBeenCalledTimes(1);
  });

  it('without a listing asks the server (a HEAD)', async () => {
    const fetch = vi.fn(async () => new Response(null, { status: 404 }));
    vi.stubGlobal('fetch', fetch);
    expect(await new HttpFiles('m', 'http://x/m/').has('model.safetensors.index.json')).toBe(false);
    expect(fetch).toHaveBeenCalledTimes(1);
  });
});
