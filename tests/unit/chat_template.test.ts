import { describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { ChatTemplateLimitError, MAX_TEMPLATE_STEPS, renderChatTemplate } from '../../workers/engine/chat_template';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { json, memory, modelFiles, putJson } from '../hardening/model_variants';

/**
 * Chat templates run under a step, time and size limit (issue #8 fault 3), and render what the
 * Jinja library renders for real templates (the library's own unbounded Template.render is the
 * oracle; the texts below are the templates' documented outputs).
 */
const messages = [{ role: 'user', content: 'Why is the sky blue?' }];
const items = { messages, add_generation_prompt: true, bos_token: '<s>', eos_token: '</s>' };

// Shapes of released templates: ChatML (Qwen, SmolLM2-Instruct), Llama-2 [INST], Gemma turns.
const CHATML = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
const LLAMA2 = "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% else %}{% set loop_messages = messages %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + message['content'].strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'].strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
const GEMMA = "{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}";

describe('renders released templates as Jinja does', () => {
  it.each([
    ['ChatML', CHATML, '<|im_start|>user\nWhy is the sky blue?<|im_end|>\n<|im_start|>assistant\n'],
    ['Llama-2', LLAMA2, '<s>[INST] Why is the sky blue? [/INST]'],
    ['Gemma', GEMMA, '<s><start_of_turn>user\nWhy is the sky blue?<end_of_turn>\n<start_of_turn>model\n'],
  ])('%s', (_name, template, expected) => {
    expect(renderChatTemplate(template, items)).toBe(expected);
    expect(new Template(template).render(items)).toBe(expected);
  });

  it('raise_exception and parse errors name chat_template', () => {
    expect(() => renderChatTemplate(LLAMA2, { ...items, messages: [{ role: 'assistant', content: 'x' }] })).toThrow(/chat_template raised: Conversation roles must alternate/);
    expect(() => renderChatTemplate('{% for m in messages %}', items)).toThrow(/chat_template does not parse/);
  });

  it('range() with a small bound works as in Python', () => {
    expect(renderChatTemplate('{% for i in range(3) %}{{ i }}{% endfor %}|{{ range(2, 9, 3) | join(",") }}|{{ range(5, 0, -2) | join(",") }}', {})).toBe('012|2,5,8|5,3,1');
  });
});

describe('the engine renders the tokenizer\'s template as transformers.js apply_chat_template does', () => {
  it.each([['Llama-2', LLAMA2], ['Gemma', GEMMA]])('%s on stories260K\'s tokenizer (bos_token from tokenizer_config.json)', async (_name, template) => {
    const f = modelFiles();
    const e = await Engine.load(memory(putJson(f, 'tokenizer_config.json', { ...json(f, 'tokenizer_config.json'), chat_template: template })), new CpuBackend());
    try {
      const prompt = 'Once upon a time';
      const ours = e.encodePrompt({ prompt, chatTemplate: true });
      const theirs = e.tokenizer.apply_chat_template([{ role: 'user', content: prompt }], { add_generation_prompt: true, tokenize: true, return_tensor: false, return_dict: false }) as number[];
      expect(ours).toEqual(theirs);
      expect(ours[0]).toBe(1); // the template's bos_token "<s>" is id 1
    } finally {
      e.dispose();
    }
  });
});

describe('templates that would hang or exhaust memory are stopped with a message', () => {
  it('nested loops whose literal bounds each pass the static check stop at the step limit', () => {
    const t = '{% for a in range(10000) %}{% for b in range(10000) %}x{% endfor %}{% endfor %}';
    const err = (() => { try { renderChatTemplate(t, items, { ms: 600_000 }); } catch (e) { return e as Error; } return null; })();
    expect(err).toBeInstanceOf(ChatTemplateLimitError);
    expect(err!.message).toMatch(new RegExp(`chat_template ran ${MAX_TEMPLATE_STEPS} interpreter steps without finishing`));
  });

  it('a loop bound computed at run time is refused by range() before the list is built', () => {
    expect(() => renderChatTemplate('{% set n = 99999 %}{% for i in range(n * n) %}x{% endfor %}', items)).toThrow(/calls range\(\) with 9999800001 items; above 10000/);
  });

  it('a string that doubles each step stops at the size limit', () => {
    const t = "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}";
    expect(() => renderChatTemplate(t, items, { chars: 1e5 })).toThrow(/built a string of 131072 characters; above 100000/);
  });

  it('the wall-clock limit stops a render past its deadline', () => {
    const t = '{% for a in range(10000) %}{{ a }}{% endfor %}';
    expect(renderChatTemplate(t, items).length).toBeGreaterThan(10000);
    expect(() => renderChatTemplate(t, items, { ms: -1 })).toThrow(/ran for more than -1 ms without finishing/);
  });

  it('a run-time failure names chat_template', () => {
    expect(() => renderChatTemplate('{{ messages.count() }}', items)).toThrow(/chat_template failed: Cannot call something that is not a function/);
  });

  it('literal bounds and repeat factors above 10 000 are refused before anything runs', () => {
    expect(() => renderChatTemplate('{% for i in range(1000000000) %}x{% endfor %}', items)).toThrow(/loops over range\(1000000000\)/);
    expect(() => renderChatTemplate("{{ 'x' * 1000000000 }}", items)).toThrow(/repeats a value 1000000000 times/);
  });
});
