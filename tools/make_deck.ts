/**
 * Writes public/experiments/deck.json: the poster deck of prepared experiments on the bundled
 * stories260K (the last one compares it with the bundled fine-tune stories260K-happy-ft), each an experiment file (docs/experiment-format.md) with a title and a note saying
 * what to look at. The CAA vector is built here from public/steering/happy_sad.json with the engine,
 * so the deck is reproducible: `npx tsx tools/make_deck.ts`. tests/integration/deck.test.ts checks
 * that every effect the notes claim is real on the model.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { EXPERIMENT_FORMAT, EXPERIMENT_VERSION, parseExperiment, type Deck } from '../workers/engine/experiment';
import { NodeFiles } from '../workers/engine/io/node_files';
import { caaVector } from '../workers/engine/studies/vectors';

const ROOT = path.join(import.meta.dirname, '..');
const MODEL = path.join(ROOT, 'public', 'models', 'stories260K');
const OUT = path.join(ROOT, 'public', 'experiments', 'deck.json');
const DECK_HOOK = 'blocks.3.hook_resid_post';

async function main(): Promise<void> {
  const set = JSON.parse(fs.readFileSync(path.join(ROOT, 'public', 'steering', 'happy_sad.json'), 'utf8')) as { positive: string[]; negative: string[] };
  const engine = await Engine.load(new NodeFiles(MODEL), new CpuBackend());
  const v = await caaVector(engine, { positive: set.positive, negative: set.negative, hook: DECK_HOOK });
  engine.dispose();
  const vector = { name: 'happy − sad (CAA)', hook: DECK_HOOK, model: 'stories260K', dModel: v.vector.length, provenance: { method: 'caa' as const, position: 'last', positive: set.positive, negative: set.negative }, createdAt: '', values: Array.from(v.vector) };
  const base = { format: EXPERIMENT_FORMAT, version: EXPERIMENT_VERSION, model: { kind: 'bundled', name: 'stories260K' } };
  const raw = [
    {
      ...base, title: 'Where does “she” win?', note: 'Girl → “she” by +4 nats, but only in the final layer (L4): L0–L3 look the same for a boy (next slide).',
      prompt: 'The little girl saw a dog. Then', good: { mode: 'text', value: ' she' }, bad: { mode: 'text', value: ' he' }, view: { name: 'margins' },
    },
    {
      ...base, title: 'Same sentence, a boy', note: 'Only the last block flips the margin to “he” (−2.6 nats): the decision forms late.',
      prompt: 'The little boy saw a dog. Then', good: { mode: 'text', value: ' she' }, bad: { mode: 'text', value: ' he' }, view: { name: 'margins' },
    },
    {
      ...base, title: 'Steering mood: dose–response', note: 'Adding the CAA happy − sad vector at block 3 moves Δ(happy − sad) from −4.0 (α = −8) to +4.4 (α = +8); KL shows the cost.',
      prompt: 'The little girl felt very', good: { mode: 'text', value: ' happy' }, bad: { mode: 'text', value: ' sad' },
      vectors: [vector], view: { name: 'dose', sweep: { layers: '3', doses: '-8,-4,-2,0,2,4,8', site: 'hook_resid_post', type: 'add', vector: 0 } },
    },
    {
      // A prompt whose unsteered story is not happy already (issue 29 item 10: "She felt very" went on "proud of herself" either way):
      // the steered story differs from its first token. Checked with the runner: generate --intervention '{"alpha":4,…}'.
      ...base, title: 'Steered vs unsteered story', note: 'Same seed, greedy: with happy − sad added (α = 4) Ben feels “proud” instead of “scared” from the first token, and Δ(happy − sad) at the first step rises from +0.15 to +3.48 nats.',
      prompt: 'It was a rainy day and Ben could not go outside. He felt very', good: { mode: 'text', value: ' happy' }, bad: { mode: 'text', value: ' sad' },
      generation: { maxNewTokens: 24, temperature: 0, topK: 0, seed: 0 },
      vectors: [vector], interventions: [{ hook: DECK_HOOK, type: 'add', dose: 4, vector: 0, positions: 'all' }], view: { name: 'generation' },
    },
    {
      ...base, title: 'Attention sinks', note: 'In the last layer a quarter of the heads put over 30 % of their attention on <s> (α₀ > 0.3); earlier layers spread it.',
      prompt: 'Once upon a time, there was a little girl named Lily. She loved to play outside.', good: { mode: 'text', value: ' She' }, bad: { mode: 'text', value: ' He' }, view: { name: 'sinks' },
    },
    {
      // model B: the bundled fine-tune of stories260K in block 3's MLP only (public/models/stories260K-happy-ft/finetune.json)
      ...base, modelB: { kind: 'bundled', name: 'stories260K-happy-ft' }, title: 'Base vs fine-tune: what changed?',
      note: 'A fine-tune moved Δ(happy − sad) from +0.7 to +8.1 nats. Only block 3’s MLP weights differ, and patching its output from B into A gives B’s margin (r = 1); r = 0 upstream.',
      prompt: 'Lucy got a new ball. She was very', good: { mode: 'text', value: ' happy' }, bad: { mode: 'text', value: ' sad' }, view: { name: 'compare' },
    },
  ];
  const deck: Deck = { format: 'branchpoint-deck', title: 'Branchpoint on stories260K', experiments: raw.map((e) => parseExperiment(e)) };
  fs.mkdirSync(path.dirname(OUT), { recursive: true });
  fs.writeFileSync(OUT, JSON.stringify(deck, null, 1) + '\n');
  console.log(`wrote ${OUT}: ${deck.experiments.length} experiments`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) await main();
