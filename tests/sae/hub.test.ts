import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockHub, type MockHub } from '../../tools/mock-hub';
import { HubFiles } from '../../workers/engine/io/hub_files';
import { assertSaeFits } from '../../workers/engine/sae/estimate';
import { readSae } from '../../workers/engine/sae/files';
import { sharedPath } from '../shared';
import { runCli } from '../cli_run';
import { SAE_DIRS } from './sae_files';

/**
 * SAEs from a Hub repo path (tools/mock-hub.ts serves a repo in Gemma Scope's layout holding the
 * shared JumpReLU SAE's params.npz at layer_2/width_256/average_l0_5): the hook comes from the path,
 * the size guard refuses before any weight is fetched, and the runner loads it with --endpoint.
 */
const REPO = 'google/gemma-scope-2b-pt-res';
const SITE = 'layer_2/width_256/average_l0_5';
let hub: MockHub;
let dir: string;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-sae-hub-'));
  fs.mkdirSync(path.join(dir, SITE), { recursive: true });
  fs.copyFileSync(path.join(SAE_DIRS.jumprelu, 'params.npz'), path.join(dir, SITE, 'params.npz'));
  fs.mkdirSync(path.join(dir, 'saelens'));
  for (const f of ['cfg.json', 'sae_weights.safetensors']) fs.copyFileSync(path.join(SAE_DIRS.relu, f), path.join(dir, 'saelens', f));
  hub = await startMockHub({ repos: { [REPO]: { revisions: { main: dir } } } });
});
afterAll(async () => {
  await hub.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('SAEs from the Hub', () => {
  it('a Gemma Scope path gives the hook (layer_2 → blocks.2.hook_resid_post) and the Neuronpedia id', async () => {
    const w = await readSae(new HubFiles(REPO, { endpoint: hub.url }), SITE);
    expect(w.cfg).toMatchObject({ architecture: 'jumprelu', hookName: 'blocks.2.hook_resid_post', dIn: 64, dSae: 256, neuronpediaId: 'gemma-2-2b/2-gemmascope-res-256', layout: 'gemma_scope' });
  });

  it('the size guard refuses a SAELens SAE from its header alone, before the weights are fetched', async () => {
    hub.log.length = 0;
    const limits = { maxBufferSize: Infinity, maxStorageBufferBindingSize: Infinity, memoryBudget: 1 << 20, device: 'a 1 MiB test budget' };
    await expect(assertSaeFits(new HubFiles(REPO, { endpoint: hub.url }), 'saelens', limits)).rejects.toThrow(/saelens needs 2 MiB \(d_in 64 × d_sae 256, float32, with an encode of 512 tokens\); a 1 MiB test budget allows 1 MiB/);
    const whole = hub.log.filter((r) => r.url.endsWith('.safetensors') && r.method === 'GET' && !r.range);
    expect(whole).toEqual([]);
  });

  it('the runner loads an SAE by Hub path with --endpoint', async () => {
    const r = await runCli(['sae', '--model', sharedPath('models', 'stories260K'), '--sae', `${REPO}/${SITE}`, '--endpoint', hub.url, '--prompt', 'Once upon a time', '--top-k', '2']);
    expect(r.err).toBe('');
    const out = JSON.parse(r.out);
    expect(out.hook).toBe('blocks.2.hook_resid_post');
    expect(out.ids).toEqual([1, 403, 407, 261, 378]);
    expect(out.neuronpedia).toBe('https://www.neuronpedia.org/gemma-2-2b/2-gemmascope-res-256/{feature}');
  });
});
