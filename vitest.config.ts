import { defineConfig } from 'vitest/config';
import * as path from 'node:path';
import { bundledModels } from './tools/bundled_models.ts';

export default defineConfig({
  // As in the app (vite.config.ts): component tests in a DOM environment resolve imports as the page does.
  plugins: [bundledModels(path.join(import.meta.dirname, 'public'))],
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
