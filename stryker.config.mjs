import * as path from 'node:path';

// StrykerJS mutation testing, one engine folder per run (slow on 2 cores: `npm run mutation`, not in CI).
// MUTATION_TARGET = analysis | steering | model picks the mutated folders and the Vitest subset that
// exercises them (vitest.mutation.config.ts reads the same variable). Results: docs/mutation.md.
// 'analysis' mutates the pure maths (analysis/) and the studies built on it (studies/).
const target = process.env.MUTATION_TARGET;
if (!['analysis', 'steering', 'model'].includes(target)) {
  throw new Error(`set MUTATION_TARGET to analysis, steering or model (got ${target})`);
}

const run = process.env.MUTATION_RUN ? `${target}-${process.env.MUTATION_RUN}` : target;

// Tests find the golden data through ../shared, which a sandbox in .stryker-tmp/ does not have.
process.env.BRANCHPOINT_SHARED ??= path.resolve('..', 'shared');

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner'],
  // MUTATION_FILES narrows a run to some files of the folder (comma-separated globs), e.g. to bound
  // a run on a busy machine; MUTATION_SKIP_STRINGS=1 leaves out string-literal mutants (error texts).
  mutate: process.env.MUTATION_FILES ? process.env.MUTATION_FILES.split(',') : (target === 'analysis' ? ['analysis', 'studies'] : [target]).map((d) => `workers/engine/${d}/**/*.ts`),
  mutator: { excludedMutations: process.env.MUTATION_SKIP_STRINGS === '1' ? ['StringLiteral'] : [] },
  coverageAnalysis: 'perTest',
  // MUTATION_IGNORE_STATIC=1 leaves out static mutants (reached only while a module loads or in a
  // beforeAll, so every test must rerun for each): they are listed as Ignored in the report.
  ignoreStatic: process.env.MUTATION_IGNORE_STATIC === '1',
  concurrency: Number(process.env.MUTATION_CONCURRENCY ?? 1),
  incremental: true,
  // MUTATION_RUN names a run of part of a folder (e.g. "b"), so two runs side by side keep their own
  // incremental and JSON reports: reports/mutation/incremental-<folder>-<run>.json, <folder>-<run>.json.
  incrementalFile: `reports/mutation/incremental-${run}.json`,
  // MUTATION_TIMEOUT_MS bounds the slack added to a mutant's timeout (a timed-out mutant costs at least this).
  timeoutMS: Number(process.env.MUTATION_TIMEOUT_MS ?? 60_000),
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: `reports/mutation/${run}.json` },
  cleanTempDir: 'always',
  ignorePatterns: ['e2e', 'dist', 'docs', '.artifacts', 'reports', 'test-results', 'playwright-report'],
};
