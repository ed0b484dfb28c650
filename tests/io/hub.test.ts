import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { CancelledError } from '../../workers/engine/io/download';
import { HubFiles, parseRepoRef } from '../../workers/engine/io/hub_files';
import { readJson } from '../../workers/engine/io/model_files';
import { parseSafetensors } from '../../workers/engine/io/safetensors';
import { defaultRepos, startMockHub, type MockHub } from '../../tools/mock-hub';
import { maxAbsDiff, readReference, sharedPath } from '../shared';

/**
 * HubFiles against the mock Hub (tools/mock-hub.ts): the resolve URL layout, revisions, the CDN
 * redirect, Range requests (and servers that ignore them), the gated and not-found messages, the
 * token's confinement to the Authorization header, progress and cancel.
 */

const LLAMA = sharedPath('fixtures', 'llama-tiny');
const GPT2 = sharedPath('fixtures', 'gpt2-tiny');
const TOKEN = 'hf_secretTOKEN1234567890';

let hub: MockHub;
beforeAll(async () => {
  hub = await startMockHub({
    repos: {
      ...defaultRepos(),
      'org/tiny': { revisions: { main: LLAMA, v2: GPT2, 'refs/pr/1': GPT2 } },
      'org/gated': { revisions: { main: LLAMA }, token: TOKEN },
    },
  });
});
afterAll(() => hub.close());

/** Requests logged while `fn` runs. */
async function logged<T>(fn: () => Promise<T>): Promise<{ value: T; log: MockHub['log'] }> {
  const from = hub.log.length;
  const value = await fn();
  return { value, log: hub.log.slice(from) };
}

describe('parseRepoRef', () => {
  it('splits org/name@revision and rejects what is not a repo id', () => {
    expect(parseRepoRef('openai-community/gpt2')).toEqual({ repo: 'openai-community/gpt2', revision: undefined });
    expect(parseRepoRef('Qwen/Qwen3-0.6B@refs/pr/3')).toEqual({ repo: 'Qwen/Qwen3-0.6B', revision: 'refs/pr/3' });
    expect(parseRepoRef('./models/stories260K')).toBeNull();
    expect(parseRepoRef('a/b/c')).toBeNull();
    expect(parseRepoRef('org/name@')).toBeNull();
  });
});

describe('HubFiles over the mock Hub', () => {
  it('reads {endpoint}/{repo}/resolve/{revision}/{file}, revision main by default', async () => {
    const f = new HubFiles('org/tiny', { endpoint: hub.url + '/' });
    expect(f.url('config.json')).toBe(`${hub.url}/org/tiny/resolve/main/config.json`);
    const { value, log } = await logged(() => f.bytes('config.json'));
    expect(Buffer.from(value).equals(fs.readFileSync(`${LLAMA}/config.json`))).toBe(true);
    expect(log.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /org/tiny/resolve/main/config.json']);
  });

  it('reads the revision asked for, URL-encoding revisions with slashes', async () => {
    const v2 = JSON.parse(new TextDecoder().decode(await new HubFiles('org/tiny', { endpoint: hub.url, revision: 'v2' }).bytes('config.json')));
    expect(v2.model_type).toBe('gpt2');
    const pr = new HubFiles('org/tiny', { endpoint: hub.url, revision: 'refs/pr/1' });
    expect(pr.url('config.json')).toBe(`${hub.url}/org/tiny/resolve/refs%2Fpr%2F1/config.json`);
    expect(JSON.parse(new TextDecoder().decode(await pr.bytes('config.json'))).model_type).toBe('gpt2');
    await expect(new HubFiles('org/tiny', { endpoint: hub.url, revision: 'nope' }).has('config.json')).rejects.toThrow('revision not found: "nope" in org/tiny');
  });

  it('follows the 302 to the CDN for safetensors and gets the file byte for byte', async () => {
    const f = new HubFiles('org/tiny', { endpoint: hub.url });
    const { value, log } = await logged(() => f.bytes('model.safetensors'));
    expect(Buffer.from(value).equals(fs.readFileSync(`${LLAMA}/model.safetensors`))).toBe(true);
    expect(log.map((r) => r.status)).toEqual([302, 200]);
    expect(log[1].url).toMatch(/^\/_cdn\//);
  });

  it('reads a byte range with a Range request (206), and size() from its Content-Range', async () => {
    const f = new HubFiles('org/tiny', { endpoint: hub.url });
    const disk = fs.readFileSync(`${LLAMA}/model.safetensors`);
    const { value, log } = await logged(async () => [await f.range('model.safetensors', 8, 40), await f.size('model.safetensors')] as const);
    expect(Buffer.from(value[0]).equals(disk.subarray(8, 40))).toBe(true);
    expect(value[1]).toBe(disk.length);
    expect(log.map((r) => [r.status, r.range, r.bytes])).toEqual([[302, 'bytes=8-39', 0], [206, 'bytes=8-39', 32]]);
  });

  it('cuts off a server that ignores Range after the bytes it needs', async () => {
    const slow = await startMockHub({ repos: { 'org/tiny': { revisions: { main: LLAMA } } }, ignoreRanges: true, chunkDelayMs: 50 });
    try {
      const f = new HubFiles('org/tiny', { endpoint: slow.url });
      const disk = fs.readFileSync(`${LLAMA}/model.safetensors`);
      const got = await f.range('model.safetensors', 100, 200);
      expect(Buffer.from(got).equals(disk.subarray(100, 200))).toBe(true);
      await new Promise((r) => setTimeout(r, 200));
      const served = slow.log.find((r) => r.url.startsWith('/_cdn/'))!;
      expect(served.status).toBe(200);
      expect(served.bytes).toBeLessThan(disk.length / 2);
    } finally {
      await slow.close();
    }
  });

  it('turns 401 and 403 on a gated repo into the licence message, and loads with the right token', async () => {
    // The Hub's 401 says GatedRepo in X-Error-Code: the message says gated, not "gated, private or missing".
    const anonymous = 'org/gated is gated: accept its licence on huggingface.co and paste an access token';
    await expect(new HubFiles('org/gated', { endpoint: hub.url }).bytes('config.json')).rejects.toThrow(anonymous);
    await expect(new HubFiles('org/gated', { endpoint: hub.url }).has('config.json')).rejects.toThrow(anonymous);
    const refused = 'org/gated is gated: accept its licence on huggingface.co and paste an access token (the token given was refused, or its account has not been granted access yet)';
    await expect(new HubFiles('org/gated', { endpoint: hub.url, token: 'hf_wrong' }).bytes('config.json')).rejects.toThrow(refused);
    const ok = await new HubFiles('org/gated', { endpoint: hub.url, token: TOKEN }).bytes('config.json');
    expect(Buffer.from(ok).equals(fs.readFileSync(`${LLAMA}/config.json`))).toBe(true);
  });

  it('says which file is missing in which repo@revision (404 EntryNotFound), and has() answers false with that reason', async () => {
    const f = new HubFiles('org/tiny', { endpoint: hub.url, revision: 'v2' });
    await expect(f.bytes('missing.json')).rejects.toThrow('file missing: missing.json not found in org/tiny@v2');
    await expect(f.range('missing.safetensors', 0, 8)).rejects.toThrow('file missing: missing.safetensors not found in org/tiny@v2');
    expect(await f.has('missing.json')).toBe(false);
    await expect(readJson(f, 'missing.json')).rejects.toThrow(`${f.label}: missing.json is missing (file missing: org/tiny exists at revision "v2" but has no missing.json)`);
  });

  it('a bare 404 (no X-Error-Code: not the Hub, or a mirror) says it cannot tell repository, revision and file apart', async () => {
    const bare = http.createServer((_, res) => { res.statusCode = 404; res.end('Not Found'); });
    await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;
    try {
      const f = new HubFiles('org/typo', { endpoint });
      await expect(readJson(f, 'config.json')).rejects.toThrow(`config.json is missing (HTTP 404 without the Hub's X-Error-Code, so the repository, the revision or the file may be missing; is ${endpoint} a Hugging Face Hub?)`);
      await expect(f.bytes('config.json')).rejects.toThrow("config.json not found in org/typo@main (HTTP 404 without the Hub's X-Error-Code");
    } finally {
      await new Promise<void>((resolve) => bare.close(() => resolve()));
    }
  });

  it('a missing repo: without a token the Hub answers 401 with RepoNotFound, and the message says not found (or private); with one, "not found"', async () => {
    const { value: err, log } = await logged(() => new HubFiles('org/absent', { endpoint: hub.url }).has('config.json').then(() => null, (e: Error) => e));
    expect(log.map((r) => r.status)).toEqual([401]);
    // The Hub's 401 carries X-Error-Code RepoNotFound: the message says not found, and that a private repo needs a token.
    expect(err?.message).toBe(`repository not found: org/absent at ${hub.url} (if it is private, paste an access token)`);
    await expect(new HubFiles('org/absent', { endpoint: hub.url, token: TOKEN }).has('config.json')).rejects.toThrow(`repository not found: org/absent at ${hub.url}`);
  });

  it('sends the token only in the Authorization header: never in a URL, the label, an error or JSON', async () => {
    const f = new HubFiles('org/gated', { endpoint: hub.url, token: TOKEN });
    const { log } = await logged(async () => {
      await f.has('config.json');
      await f.bytes('model.safetensors');
      await f.range('model.safetensors', 0, 8);
      await f.bytes('nope.json').catch((e: Error) => expect(e.message).not.toContain(TOKEN));
    });
    expect(log.length).toBeGreaterThan(4);
    for (const r of log) {
      expect(r.url).not.toContain(TOKEN);
      if (r.url.includes('/resolve/')) expect(r.authorization).toBe(`Bearer ${TOKEN}`);
    }
    expect(`${f.label} ${JSON.stringify(f)} ${f.url('config.json')}`).not.toContain(TOKEN);
  });

  it('streams with progress (bytes, rate, ETA) and stops with a "cancelled" error when aborted', async () => {
    const slow = await startMockHub({ repos: { 'org/tiny': { revisions: { main: LLAMA } } }, chunkDelayMs: 30 });
    try {
      const seen: { loaded: number; total: number; bytesPerSecond: number; etaSeconds?: number }[] = [];
      const full = await new HubFiles('org/tiny', { endpoint: slow.url, onDownload: (_, p) => seen.push(p) }).bytes('model.safetensors');
      const size = fs.statSync(`${LLAMA}/model.safetensors`).size;
      expect(full.length).toBe(size);
      expect(seen.length).toBeGreaterThan(3);
      expect(seen.every((p, i) => p.total === size && (i === 0 || p.loaded > seen[i - 1].loaded))).toBe(true);
      expect(seen.at(-1)!.loaded).toBe(size);
      const mid = seen[Math.floor(seen.length / 2)];
      expect(mid.bytesPerSecond).toBeGreaterThan(0);
      expect(mid.etaSeconds).toBeCloseTo((size - mid.loaded) / mid.bytesPerSecond, 6);

      const ctrl = new AbortController();
      const f = new HubFiles('org/tiny', { endpoint: slow.url, signal: ctrl.signal, onDownload: () => ctrl.abort() });
      const err = await f.bytes('model.safetensors').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CancelledError);
      expect((err as Error).message).toMatch(/^cancelled: the download of model\.safetensors from .*org\/tiny@main was stopped/);
      await expect(f.bytes('config.json')).rejects.toThrow(/^cancelled/);
    } finally {
      await slow.close();
    }
  });

  it('loads a fixture through the Hub layout with the reference logits', async () => {
    const files = new HubFiles('fixtures/qwen2-tiny', { endpoint: hub.url });
    const engine = await Engine.load(files, new CpuBackend());
    const meta = JSON.parse(fs.readFileSync(sharedPath('fixtures', 'qwen2-tiny', 'reference', 'meta.json'), 'utf8'));
    const ref = readReference(sharedPath('fixtures', 'qwen2-tiny', 'reference', 'seq0.safetensors')).get('logits')!;
    const { logits } = await engine.run(meta.sequences[0].input_ids);
    expect(maxAbsDiff(logits, ref.data)).toBeLessThan(1e-4);
    expect(parseSafetensors(await files.bytes('model.safetensors')).tensors.size).toBeGreaterThan(0);
    engine.dispose();
  });
});
