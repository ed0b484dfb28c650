import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { hookNames } from '../../workers/engine/model/hooks';
import { everyBlockSites, steerableHooks } from '../../app/lib/hooks';
import { hasRouters } from '../../app/views/RoutesView';
import { sharedPath } from '../shared';

/**
 * The app's hook lists follow the architecture's presentAt (model/hooks.ts): the intervention
 * editor offers router hooks only at sparse layers, the dose–response sweep only sites present in
 * every block, and the Expert routes tab is shown only for a model with routers. qwen2_moe-tiny has
 * a dense layer 1 between two sparse ones; llama-tiny has no routers.
 */
describe('hook lists of a mixture-of-experts model', () => {
  const names = async (root: string, name: string) => {
    const b = new CpuBackend();
    const { model } = await loadTransformer(new NodeFiles(sharedPath(root, name)), b);
    b.dispose();
    return hookNames(model.spec);
  };

  it('qwen2_moe-tiny: router hooks at layers 0 and 2 only; the sweep offers neither routers nor mlp.hook_pre', async () => {
    const hooks = steerableHooks(await names('fixtures-moe', 'qwen2_moe-tiny'));
    expect(hooks.filter((h) => h.endsWith('.mlp.hook_router_logits'))).toEqual(['blocks.0.mlp.hook_router_logits', 'blocks.2.mlp.hook_router_logits']);
    expect(hooks.filter((h) => h.endsWith('.mlp.hook_pre'))).toEqual(['blocks.1.mlp.hook_pre']);
    const sites = everyBlockSites(hooks);
    expect(sites).toContain('hook_resid_post');
    expect(sites.filter((s) => s.startsWith('mlp.hook_'))).toEqual([]);
    expect(hasRouters(hooks)).toBe(true);
  });

  it('mixtral-tiny (every layer sparse) offers the router sites at every layer; llama-tiny has no routers and its MLP sites', async () => {
    expect(everyBlockSites(await names('fixtures-moe', 'mixtral-tiny'))).toEqual(expect.arrayContaining(['mlp.hook_router_logits', 'mlp.hook_expert_indices', 'mlp.hook_expert_weights']));
    const dense = await names('fixtures', 'llama-tiny');
    expect(hasRouters(dense)).toBe(false);
    expect(everyBlockSites(dense)).toEqual(expect.arrayContaining(['mlp.hook_pre', 'mlp.hook_post', 'hook_resid_post']));
  });
});
