/**
 * Chat templates rendered under a limit (issue #8 fault 3): a tokenizer_config.json chat_template is
 * a Jinja program, and a hostile or broken one can loop for hours or build a string of gigabytes.
 * transformers.js renders it synchronously with no limit (`apply_chat_template`), so the engine
 * renders it here instead, with the same parser and interpreter (@huggingface/jinja, the one
 * transformers.js bundles) and the same variables, but counting interpreter steps (every statement
 * and expression evaluated) and wall-clock time, with range() and the strings built bounded.
 * A template is also checked before it runs (chatTemplateGuard): a literal loop bound or repeat
 * factor beyond MAX_TEMPLATE_RANGE is refused without rendering anything.
 */
import { Environment, Interpreter, parse, tokenize } from '@huggingface/jinja';

/** Largest loop bound a chat template may state or build with range() (templates iterate over messages, never this far). */
export const MAX_TEMPLATE_RANGE = 10_000;
/** Longest chat template accepted, in characters (released templates are under 20 000). */
export const MAX_TEMPLATE_CHARS = 200_000;
/** Interpreter steps a render may take (a released template takes a few hundred to a few thousand for one message). */
export const MAX_TEMPLATE_STEPS = 100_000;
/** Wall-clock limit of one render, ms (half the fuzzer's 1 s CPU bound per input, so a render stopped by it stays inside that bound). */
export const MAX_TEMPLATE_MS = 500;
/** Longest string a render may build, in characters (a prompt is far shorter than this). */
export const MAX_RENDERED_CHARS = 4_000_000;

/** A render stopped at a limit; the message names the limit and tokenizer_config.json chat_template. */
export class ChatTemplateLimitError extends Error {
  override name = 'ChatTemplateLimitError';
}

/** Limits of one render (defaults: the MAX_TEMPLATE_* constants). */
export interface TemplateLimits {
  steps?: number;
  ms?: number;
  chars?: number;
}

const where = 'tokenizer_config.json chat_template';

/**
 * Refuses a chat template that states an unbounded amount of work before it is rendered: a template
 * longer than MAX_TEMPLATE_CHARS, a range() whose literal bound exceeds MAX_TEMPLATE_RANGE, or string/
 * list repetition by a literal factor above it ("x" * 1e9: one step that would allocate gigabytes).
 * @param template the tokenizer's chat_template (a string, or a list of {name, template}).
 * @throws Error naming tokenizer_config.json chat_template and the construct at fault.
 */
export function chatTemplateGuard(template: unknown): void {
  const texts = typeof template === 'string' ? [template]
    : Array.isArray(template) ? template.map((t) => (t as { template?: unknown })?.template).filter((t): t is string => typeof t === 'string')
      : template && typeof template === 'object' ? Object.values(template).filter((t): t is string => typeof t === 'string') : [];
  for (const t of texts) {
    if (t.length > MAX_TEMPLATE_CHARS) throw new Error(`${where} is ${t.length} characters; expected at most ${MAX_TEMPLATE_CHARS}`);
    for (const m of t.matchAll(/range\s*\(([^)]*)\)/g)) {
      for (const n of m[1].match(/\d[\d_]*(?:\.\d+)?(?:e\d+)?/gi) ?? []) {
        if (Number(n.replace(/_/g, '')) > MAX_TEMPLATE_RANGE) throw new Error(`${where} loops over ${m[0]}; a bound above ${MAX_TEMPLATE_RANGE} would hang the tab, so the template is refused`);
      }
    }
    for (const m of t.matchAll(/\*\s*(\d[\d_]*(?:e\d+)?)/gi)) {
      if (Number(m[1].replace(/_/g, '')) > MAX_TEMPLATE_RANGE) throw new Error(`${where} repeats a value ${m[1]} times; above ${MAX_TEMPLATE_RANGE} the template is refused`);
    }
  }
}

/** range() as Jinja's (Python's), refusing more than MAX_TEMPLATE_RANGE items before building them. */
function boundedRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (step === 0) throw new Error('range() step must not be zero');
  const n = Math.max(0, Math.ceil((stop - start) / step));
  if (!(n <= MAX_TEMPLATE_RANGE)) throw new ChatTemplateLimitError(`${where} calls range() with ${n} items; above ${MAX_TEMPLATE_RANGE} the template is stopped`);
  return Array.from({ length: n }, (_, i) => start + i * step);
}

/** strftime_now(format) of the Jinja globals: %Y %m %d %b %B %H %M %% of the current local time. */
function strftimeNow(format: string): string {
  const d = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  const month = (style: 'long' | 'short') => new Intl.DateTimeFormat(undefined, { month: style }).format(d);
  return format.replace(/%[YmdbBHM%]/g, (t) => ({
    '%Y': String(d.getFullYear()), '%m': pad(d.getMonth() + 1), '%d': pad(d.getDate()), '%b': month('short'),
    '%B': month('long'), '%H': pad(d.getHours()), '%M': pad(d.getMinutes()), '%%': '%',
  })[t]!);
}

/** The interpreter with a step counter, a deadline and a cap on the strings it builds. */
class BoundedInterpreter extends Interpreter {
  private steps = 0;
  private readonly deadline: number;

  constructor(env: Environment, private readonly limits: Required<TemplateLimits>) {
    super(env);
    this.deadline = Date.now() + limits.ms;
  }

  override evaluate(statement: Parameters<Interpreter['evaluate']>[0], environment: Environment): ReturnType<Interpreter['evaluate']> {
    if (++this.steps > this.limits.steps) throw new ChatTemplateLimitError(`${where} ran ${this.limits.steps} interpreter steps without finishing (a loop without a bound?); the template is stopped`);
    if ((this.steps & 255) === 0 && Date.now() > this.deadline) throw new ChatTemplateLimitError(`${where} ran for more than ${this.limits.ms} ms without finishing; the template is stopped`);
    const r = super.evaluate(statement, environment);
    const v = (r as { value?: unknown }).value;
    if (typeof v === 'string' && v.length > this.limits.chars) throw new ChatTemplateLimitError(`${where} built a string of ${v.length} characters; above ${this.limits.chars} the template is stopped`);
    return r;
  }
}

/**
 * Renders a chat template as transformers.js's `Template.render` does (lstrip_blocks and trim_blocks,
 * the Jinja globals true/false/none, raise_exception, range, strftime_now), under limits.
 * @param template Jinja source; items the variables (messages, add_generation_prompt, bos_token, …).
 * @returns the rendered text.
 * @throws Error from chatTemplateGuard before rendering; ChatTemplateLimitError when a limit is hit;
 *   Error for a template that does not parse, raises (raise_exception) or fails at run time — each
 *   naming chat_template.
 */
export function renderChatTemplate(template: string, items: Record<string, unknown>, limits: TemplateLimits = {}): string {
  chatTemplateGuard(template);
  let program: ReturnType<typeof parse>;
  try {
    program = parse(tokenize(template, { lstrip_blocks: true, trim_blocks: true }));
  } catch (e) {
    throw new Error(`${where} does not parse: ${(e as Error).message}`);
  }
  const env = new Environment();
  const globals: Record<string, unknown> = {
    false: false, true: true, none: null, False: false, True: true, None: null,
    raise_exception: (msg: string) => { throw new Error(`${where} raised: ${msg}`); },
    range: boundedRange,
    strftime_now: strftimeNow,
  };
  for (const [k, v] of Object.entries({ ...globals, ...items })) env.set(k, v);
  const interpreter = new BoundedInterpreter(env, { steps: limits.steps ?? MAX_TEMPLATE_STEPS, ms: limits.ms ?? MAX_TEMPLATE_MS, chars: limits.chars ?? MAX_RENDERED_CHARS });
  try {
    return interpreter.run(program).value as string;
  } catch (e) {
    if (e instanceof ChatTemplateLimitError || (e as Error).message.startsWith(where)) throw e;
    throw new Error(`${where} failed: ${(e as Error).message}`); // e.g. calling a value that is not a function, a stack overflow
  }
}
