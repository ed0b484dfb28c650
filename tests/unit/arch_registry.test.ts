import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SUPPORTED_MODEL_TYPES } from '../../workers/engine/arch/registry';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { sharedPath } from '../shared';
import { fixtures } from '../fixture_walk';

/** model_type of every fixture (dense and mixture-of-experts) and real model in ../shared, read from their config.json. */
function sharedModelTypes(): string[] {
  const dirs = [
    ...fixtures().map((f) => f.dir),
    sharedPath('models', 'stories260K'), sharedPath('models', 'aidreams260K'),
  ];
  return [...new Set(dirs.map((d) => String(JSON.parse(fs.readFileSync(`${d}/config.json`, 'utf8')).model_type)))];
}

describe('architecture registry', () => {
  it('every model_type in the shared fixtures and models is supported', () => {
    const types = sharedModelTypes();
    expect(types.length).toBeGreaterThanOrEqual(11);
    for (const t of ['mixtral', 'qwen2_moe', 'olmoe']) expect(types).toContain(t);
    for (const t of types) expect(SUPPORTED_MODEL_TYPES).toContain(t);
  });

  it('loading an unknown model_type fails with a message naming it and listing every supported type', async () => {
    const config = new TextEncoder().encode(JSON.stringify({ model_type: 'mamba', hidden_size: 64 }));
    const files = new MemoryFiles('mamba-test', new Map([['config.json', config]]));
    const err = await loadTransformer(files, new CpuBackend()).then(() => null, (e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).toContain('"mamba"');
    for (const t of [...sharedModelTypes(), 'gemma3_text']) expect(err!.message).toContain(t);
  });

  it('a config.json without model_type fails with the same list', async () => {
    const files = new MemoryFiles('no-type', new Map([['config.json', new TextEncoder().encode('{}')]]));
    await expect(loadTransformer(files, new CpuBackend())).rejects.toThrow(/unsupported model_type "undefined": this engine runs .*gpt2/);
  });
});
