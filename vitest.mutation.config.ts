import { defineConfig } from 'vitest/config';

/**
 * The Vitest subset StrykerJS runs for each mutated folder (stryker.config.mjs): the fast tests
 * that check the folder's definitions directly (each mutant reruns them; a model-loading suite per
 * mutant would take hours on 2 cores). Tests that start
 * the CLI in a child process are left out: a mutant is switched on inside the test process only,
 * so a child process always runs the unmutated code and could never kill one.
 */
const SUBSETS: Record<string, string[]> = {
  // The definitions (lens, margin, residual, sampling, sinks), then the causal half and the report:
  // probe/logistic/AUROC, patching and its recovery denominator, the intervention window, the report
  // and its JSON, the next-token choice and summaries, and the non-finite guards (stories260K loads in ~1 s).
  analysis: [
    'tests/analysis/definitions.test.ts', 'tests/analysis/sampling.test.ts', 'tests/analysis/lens_sampling_rules.test.ts',
    'tests/analysis/logistic.test.ts', 'tests/analysis/probe.test.ts', 'tests/integration/probe_stories.test.ts',
    'tests/integration/patching.test.ts', 'tests/unit/recovery_denominator.test.ts', 'tests/unit/patching_prompts.test.ts', 'tests/batch/batch_columns.test.ts',
    'tests/integration/window_stories.test.ts', 'tests/integration/report.test.ts', 'tests/integration/report_changeable.test.ts', 'tests/unit/report_rules.test.ts',
    'tests/unit/next_token.test.ts', 'tests/analysis/distribution.test.ts', 'tests/unit/report_json.test.ts', 'tests/integration/sampling_generate.test.ts', 'tests/hardening/nonfinite.test.ts', 'tests/hardening/nonfinite_paths.test.ts',
    'tests/analysis/finite.test.ts', 'tests/analysis/logistic_numerics.test.ts', 'tests/integration/report_set.test.ts', 'tests/integration/patching_definition.test.ts',
  ],
  // caa_stories computes its vector in beforeAll (every mutant there would be "static": all tests per
  // mutant) and fixture_spec loads nine models per run; vectors_reference and properties cover the same code.
  steering: [
    'tests/steering/spec_errors.test.ts', 'tests/steering/spec_parse.test.ts', 'tests/steering/vector_io.test.ts', 'tests/steering/vector_files_malformed.test.ts',
    'tests/steering/sweep.test.ts', 'tests/steering/vectors_reference.test.ts', 'tests/steering/vectors_requests.test.ts', 'tests/steering/properties.test.ts',
    'tests/steering/resolve.test.ts', 'tests/steering/sweep_request.test.ts',
  ],
  // Beside the real-model suites: the quantised and f16 weight paths (quant_error, quant_storage,
  // load's F16 checks), the checkpoint layouts and fixture architectures (load, transformer's
  // branches per architecture), the bad-input corpus (spec_checks' messages), SAE hooks
  // (run_context) and the explorer (PrefixCache.advance). The fuzz suite is left out (42 s, random).
  model: [
    'tests/integration/real_models.test.ts', 'tests/integration/kv_decode.test.ts', 'tests/integration/kv_prefix.test.ts', 'tests/integration/patching.test.ts', 'tests/steering/generated_steps.test.ts', 'tests/steering/properties.test.ts',
    'tests/unit/quant.test.ts', 'tests/integration/quant_weights.test.ts', 'tests/io/estimate_quant.test.ts', 'tests/io/estimate.test.ts', 'tests/io/checkpoint_formats.test.ts', 'tests/io/gguf.test.ts', 'tests/io/gguf_families.test.ts', 'tests/io/gguf_arch.test.ts',
    'tests/integration/fixtures.test.ts', 'tests/integration/f16_weights.test.ts', 'tests/integration/gemma3_attention.test.ts', 'tests/sae/interventions.test.ts', 'tests/corpus/corpus.test.ts', 'tests/branching/explorer.test.ts',
    'tests/model/*.test.ts',
  ],
};
const target = process.env.MUTATION_TARGET ?? '';
if (!SUBSETS[target]) throw new Error(`MUTATION_TARGET must be one of ${Object.keys(SUBSETS).join(', ')}`);
// MUTATION_TESTS (comma-separated test files) runs only those tests instead of the folder's subset, e.g.
// a file's unit tests without the model-loading suites; a score measured so must name them
// (a mutant only a left-out suite kills counts as survived).
const include = process.env.MUTATION_TESTS ? process.env.MUTATION_TESTS.split(',') : SUBSETS[target];

export default defineConfig({
  test: {
    include,
    exclude: ['tests/**/cli*.test.ts'],
    testTimeout: 120_000,
  },
});
