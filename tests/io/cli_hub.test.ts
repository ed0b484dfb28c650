import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockHub, type MockHub } from '../../tools/mock-hub';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';

/**
 * `branchpoint --model org/name[@rev]` reads the model from a Hub endpoint (--endpoint or
 * HF_ENDPOINT), with HF_TOKEN for gated repos, and gives the same answer as the local folder.
 */

const MODEL = sharedPath('models', 'stories260K');
const TOKEN = 'hf_cliSECRET42';
const ARGS = ['--prompt', 'Lily and Tom played with a ball. Lily gave the ball to', '--good', ' Tom', '--bad', ' Lily'];

let hub: MockHub;
beforeAll(async () => {
  hub = await startMockHub({ repos: { 'karpathy/stories260K': { revisions: { main: MODEL } }, 'meta/gated260K': { revisions: { main: MODEL }, token: TOKEN } } });
});
afterAll(() => hub.close());

/** Runs the CLI asynchronously (the mock Hub answers from this process). */
function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'HF_TOKEN' && k !== 'HF_ENDPOINT'));
  return runCli(args, { ...clean, ...env });
}

describe('branchpoint --model <Hub id>', () => {
  it('margins over --endpoint equal margins from the local folder', async () => {
    const local = await cli(['margins', '--model', MODEL, ...ARGS]);
    const viaHub = await cli(['margins', '--model', 'karpathy/stories260K', '--endpoint', hub.url, ...ARGS]);
    expect(viaHub.err).toBe('');
    expect(viaHub.code).toBe(0);
    expect(JSON.parse(viaHub.out)).toEqual(JSON.parse(local.out));
    expect(hub.log.some((r) => r.url === '/karpathy/stories260K/resolve/main/config.json')).toBe(true);
  });

  it('takes the endpoint from HF_ENDPOINT, a revision after @, and HF_TOKEN for a gated repo (header only)', async () => {
    const from = hub.log.length;
    const r = await cli(['margins', '--model', 'meta/gated260K@main', ...ARGS], { HF_ENDPOINT: hub.url, HF_TOKEN: TOKEN });
    expect(r.code).toBe(0);
    const reqs = hub.log.slice(from).filter((q) => q.url.includes('/resolve/'));
    expect(reqs.length).toBeGreaterThan(3);
    expect(reqs.every((q) => q.authorization === `Bearer ${TOKEN}` && !q.url.includes(TOKEN))).toBe(true);
  });

  it('says a gated repo needs a token, and a missing revision is named', async () => {
    const gated = await cli(['margins', '--model', 'meta/gated260K', '--endpoint', hub.url, ...ARGS]);
    expect(gated.code).toBe(1);
    expect(gated.err).toContain('meta/gated260K is gated: accept its licence on huggingface.co and paste an access token');
    const rev = await cli(['margins', '--model', 'karpathy/stories260K@v9', '--endpoint', hub.url, ...ARGS]);
    expect(rev.code).toBe(1);
    expect(rev.err).toContain('revision not found: "v9" in karpathy/stories260K');
  });

  it('says when --model is neither a folder nor a Hub id', async () => {
    const r = await cli(['margins', '--model', './no/such/dir', ...ARGS]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('--model ./no/such/dir: no such folder, and not a Hub id (org/name[@revision])');
  });
});
