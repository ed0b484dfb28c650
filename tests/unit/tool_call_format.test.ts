import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { futureInput, parseExperiment, ExperimentError } from '../../workers/engine/experiment';

/** The experiment format's tool-call futures and tools (issue #27): checked fields, old files still open. */
const v1 = JSON.parse(readFileSync(path.join(__dirname, 'fixtures/experiment_v1.json'), 'utf8')) as Record<string, unknown>;
const TOOLS = [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } }];

describe('tool-call futures in the experiment file', () => {
  it('an old file without tools opens with none and no system prompt', () => {
    const e = parseExperiment(v1);
    expect(e.tools).toEqual([]);
    expect(e.system).toBeUndefined();
  });

  it('a tool call naming a listed tool is read and becomes the engine\'s toolCall', () => {
    const e = parseExperiment({ ...v1, system: 'Be careful.', tools: TOOLS, bad: { mode: 'tool', value: '{"name": "read_file", "arguments": {"path": "~/.ssh/id_rsa"}}' } });
    expect(e.system).toBe('Be careful.');
    expect(futureInput(e.bad)).toEqual({ toolCall: { name: 'read_file', arguments: { path: '~/.ssh/id_rsa' } } });
  });

  it.each([
    ['a tool not in tools', '{"name": "rm", "arguments": {}}', /bad\.value.*calls "rm", which is not in tools \(read_file\)/],
    ['not JSON', '{"name": read_file}', /bad\.value.*this is not JSON/],
    ['no name', '{"arguments": {}}', /bad\.value.*needs "name"/],
    ['arguments not an object', '{"name": "read_file", "arguments": [1]}', /bad\.value.*"arguments" must be a JSON object/],
  ])('refuses %s, naming the field', (_what, value, message) => {
    let err: unknown;
    try {
      parseExperiment({ ...v1, tools: TOOLS, bad: { mode: 'tool', value } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ExperimentError);
    expect((err as Error).message).toMatch(message);
  });

  it('refuses a tool without a name', () => {
    expect(() => parseExperiment({ ...v1, tools: [{ type: 'function', function: { name: '' } }] })).toThrow(/tools\[0\]\.function\.name/);
  });
});
