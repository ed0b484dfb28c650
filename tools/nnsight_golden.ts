/**
 * The nnsight export's golden scripts (tests/nnsight/golden/*.py): the script generated for four
 * experiments (tests/nnsight/experiments: lens with a patching grid, a dose–response sweep, a steered
 * generation's intervention window, a chat turn with a system prompt and a tool). `npx tsx tools/nnsight_golden.ts` lists them; `--write` rewrites
 * them after a deliberate change to the generator. tests/nnsight/nnsight_script.test.ts fails when a
 * generated script differs from its golden file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readExperiment } from '../workers/engine/experiment';
import { nnsightScript, type NnsightPatching } from '../workers/engine/studies/export/nnsight_script';

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'tests', 'nnsight');

/** One golden case: its experiment file, the patching grid written beside it, and where its golden script lives. */
export interface GoldenCase {
  name: string;
  experiment: string;
  patching?: NnsightPatching;
  golden: string;
}

/** The four cases. */
export const GOLDEN_CASES: readonly GoldenCase[] = ([
  { name: 'lens', patching: { corrupt: 'The little boy saw a dog. Then', hook: 'resid_pre', direction: 'denoise' } },
  { name: 'sweep' },
  { name: 'steer' },
  { name: 'chat' },
] satisfies Omit<GoldenCase, 'experiment' | 'golden'>[]).map((c) => ({ ...c, experiment: path.join(DIR, 'experiments', `${c.name}.json`), golden: path.join(DIR, 'golden', `${c.name}.py`) }));

/** The script a case generates now. */
export function goldenScript(c: GoldenCase): string {
  return nnsightScript(readExperiment(fs.readFileSync(c.experiment, 'utf8')), c.patching);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const write = process.argv.includes('--write');
  for (const c of GOLDEN_CASES) {
    if (write) {
      fs.mkdirSync(path.dirname(c.golden), { recursive: true });
      fs.writeFileSync(c.golden, goldenScript(c));
    }
    process.stdout.write(`${c.name}: ${path.relative(process.cwd(), c.golden)}${write ? ' (written)' : ''}\n`);
  }
}
