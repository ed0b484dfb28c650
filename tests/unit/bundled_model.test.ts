import { describe, expect, it } from 'vitest';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { scanBundledModels } from '../../tools/bundled_models';
import { sharedPath } from '../shared';

const PUBLIC_MODELS = path.join(__dirname, '..', '..', 'public', 'models');

/** sha256 per file name, from a `sha256sum` listing. */
function sums(file: string): Map<string, string> {
  return new Map(fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => { const [h, f] = l.split(/\s+/); return [f, h]; }));
}

describe('the bundled default model', () => {
  it('is byte-identical to the golden stories260K for every file the loader reads', () => {
    const golden = sums(sharedPath('models', 'stories260K', 'SHA256SUMS'));
    for (const f of ['config.json', 'generation_config.json', 'model.safetensors', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json']) {
      const bytes = fs.readFileSync(path.join(PUBLIC_MODELS, 'stories260K', f));
      expect(crypto.createHash('sha256').update(bytes).digest('hex'), f).toBe(golden.get(f));
    }
  });

  it('is listed by the build-time manifest with its licence and the size of every file', () => {
    const models = scanBundledModels(PUBLIC_MODELS);
    const stories = models.find((m) => m.name === 'stories260K');
    expect(stories?.licence).toBe('MIT');
    const weights = stories?.files.find((f) => f.path === 'model.safetensors');
    expect(weights?.bytes).toBe(fs.statSync(sharedPath('models', 'stories260K', 'model.safetensors')).size);
    expect(stories?.bytes).toBe(stories?.files.reduce((s, f) => s + fs.statSync(path.join(PUBLIC_MODELS, 'stories260K', f.path)).size, 0));
  });
});

describe('the bundled fine-tune stories260K-happy-ft (the Compare view from a link)', () => {
  it('is byte-identical to ../shared/models/stories260K-happy-ft for every file, finetune.json included', () => {
    for (const f of ['config.json', 'finetune.json', 'generation_config.json', 'model.safetensors', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json']) {
      const mine = fs.readFileSync(path.join(PUBLIC_MODELS, 'stories260K-happy-ft', f));
      expect(mine.equals(fs.readFileSync(sharedPath('models', 'stories260K-happy-ft', f))), f).toBe(true);
    }
    const listed = sums(path.join(PUBLIC_MODELS, 'stories260K-happy-ft', 'SHA256SUMS'));
    for (const [f, h] of listed) expect(crypto.createHash('sha256').update(fs.readFileSync(path.join(PUBLIC_MODELS, 'stories260K-happy-ft', f))).digest('hex'), f).toBe(h);
  });

  it('is listed by the manifest as MIT, beside stories260K', () => {
    const models = scanBundledModels(PUBLIC_MODELS);
    expect(models.map((m) => m.name)).toEqual(['stories260K', 'stories260K-happy-ft']);
    expect(models[1].licence).toBe('MIT');
  });
});
