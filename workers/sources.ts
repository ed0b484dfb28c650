import { HttpFiles, MemoryFiles, type ModelFiles } from './engine/io/model_files';
import type { ModelSource } from './protocol';

/**
 * Opens a model source as ModelFiles.
 * @throws Error for a source kind this build cannot open.
 */
export async function filesFor(source: ModelSource): Promise<ModelFiles> {
  switch (source.kind) {
    case 'url':
      return new HttpFiles(source.label ?? source.url, new URL(source.url, self.location.href).href);
    case 'files': {
      const map = new Map<string, Uint8Array>();
      for (const { path, file } of source.files) map.set(path.split('/').slice(-1)[0], new Uint8Array(await file.arrayBuffer()));
      return new MemoryFiles(source.label, map);
    }
    case 'hub':
      throw new Error('loading from the Hugging Face Hub is not available in this build');
  }
}
