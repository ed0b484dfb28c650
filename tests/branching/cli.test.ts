import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

/** The runner's `branch` command on stories260K against the reference trunk and greedy decoding by full recomputation. */
const MODEL = sharedPath('models', 'stories260K');
const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8'));
const lily = ref.prompts[1];
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(MODEL), new CpuBackend()); });
afterAll(() => e.dispose());

describe('branchpoint branch', () => {
  it('prints trunk_ids (the reference greedy tokens) and branch_ids of length N: new token K replaced by the alternative in context, then greedy decoding of prompt + prefix + alternative', async () => {
    const N = 10, K = 2;
    const r = await runCli(['branch', '--model', MODEL, '--prompt', lily.prompt, '--at', String(K), '--alt', ' big', '--max-new-tokens', String(N), '--good', ' Tom', '--bad', ' Lily']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out);
    expect(out.trunk_ids).toEqual(lily.greedy_ids.slice(0, N));
    expect(out.branch_ids).toHaveLength(N);
    expect(out.branch_ids.slice(0, K)).toEqual(out.trunk_ids.slice(0, K));
    const head = e.tokenizer.decode([...lily.input_ids, ...out.trunk_ids.slice(0, K)], { skip_special_tokens: true });
    expect(out.alt_id).toBe(e.tokenizer.encode(head + ' big').slice(lily.n_prompt + K)[0]);
    expect(out.branch_ids[K]).toBe(out.alt_id);
    const seq = [...lily.input_ids, ...out.branch_ids.slice(0, K + 1)];
    while (seq.length < lily.n_prompt + N) {
      const { logits } = await e.run(seq, { logits: 'last' });
      seq.push(logits.indexOf(Math.max(...logits)));
    }
    expect(out.branch_ids).toEqual(seq.slice(lily.n_prompt));
    expect(out.trunk_margins).toHaveLength(N);
    expect(out.branch_margins[K]).toBe(out.trunk_margins[K]);
    expect(out.forwarded.trunk).toBe(lily.n_prompt + N - 1);
    expect(out.forwarded.branch).toBeLessThanOrEqual(N - K);
  });

  it('--at-prompt P forks at a prompt token: prompt[0..P) + the alternative, then greedy decoding by full recomputation to n_prompt + N', async () => {
    const N = 6, P = 4;
    const r = await runCli(['branch', '--model', MODEL, '--prompt', lily.prompt, '--at-prompt', String(P), '--alt', ' dog', '--max-new-tokens', String(N), '--good', ' Tom', '--bad', ' Lily']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out);
    expect(out.trunk_ids).toEqual(lily.greedy_ids.slice(0, N));
    const head = e.tokenizer.decode(lily.input_ids.slice(0, P), { skip_special_tokens: true });
    expect(out.alt_id).toBe(e.tokenizer.encode(head + ' dog').slice(P)[0]);
    expect(out.alt_id).not.toBe(lily.input_ids[P]);
    expect(out.branch_from).toBe(P);
    const seq = [...lily.input_ids.slice(0, P), out.alt_id];
    while (seq.length < lily.n_prompt + N) {
      const { logits } = await e.run(seq, { logits: 'last' });
      seq.push(logits.indexOf(Math.max(...logits)));
    }
    expect(out.branch_ids).toEqual(seq.slice(P));
    expect(out.branch_margins).toHaveLength(lily.n_prompt + N - P);
    expect(out.forwarded.branch).toBeLessThanOrEqual(lily.n_prompt + N - P); // the prefix prompt[0..P) is read from the cache
  });

  it('refuses --at outside the new tokens with a readable message', async () => {
    const r = await runCli(['branch', '--model', MODEL, '--prompt', 'Once upon a time', '--at', '9', '--alt', ' dog', '--max-new-tokens', '4']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/--at must be a new-token index 0\.\.3/);
    const p = await runCli(['branch', '--model', MODEL, '--prompt', 'Once upon a time', '--at-prompt', '0', '--alt', ' dog', '--max-new-tokens', '4']);
    expect(p.code).toBe(1);
    expect(p.err).toMatch(/--at-prompt "0": expected a whole number ≥ 1/); // refused by its type, before the model loads
  });
});
