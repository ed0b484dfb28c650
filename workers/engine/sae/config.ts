/**
 * Sparse-autoencoder configurations in the layouts researchers publish, read into one shape.
 * - SAELens ≤ 5 (`SAEConfig.to_dict()`, flat): architecture, d_in, d_sae, hook_name,
 *   apply_b_dec_to_input, normalize_activations, activation_fn_str/_kwargs (TopK SAEs of SAELens 5
 *   are architecture "standard" with activation_fn_str "topk" and activation_fn_kwargs {k}).
 * - SAELens ≥ 6 (`sae_lens/saes/sae.py`): the same top-level fields plus `k` for "topk", and
 *   model/hook fields nested under `metadata` (no hook_layer).
 * - Gemma Scope `params.npz` ships no config: JumpReLU without b_dec subtraction, hook from the
 *   Hub path `layer_L/width_W/average_l0_K` (SAELens `get_gemma_2_config_from_hf`).
 */

export const SAE_ARCHITECTURES = ['standard', 'jumprelu', 'topk'] as const;
export type SaeArchitecture = (typeof SAE_ARCHITECTURES)[number];

/** What a loaded SAE is, whichever layout it came from. */
export interface SaeConfig {
  /** 'standard' = ReLU; 'jumprelu' uses `threshold`; 'topk' keeps the k largest. */
  architecture: SaeArchitecture;
  /** Input width (d_model for residual hooks). */
  dIn: number;
  /** Dictionary size (number of features). */
  dSae: number;
  /** TransformerLens hook name the SAE reads, e.g. "blocks.2.hook_resid_post". */
  hookName: string;
  /** TopK's k (architecture 'topk' only). */
  k?: number;
  /** Subtract b_dec from the input before encoding (SAELens standard: true; Gemma Scope: false). */
  applyBDecToInput: boolean;
  /** Only "none" is supported (the SAE reads the raw activation). */
  normalizeActivations: 'none';
  /** The model the SAE was trained on, as the config names it. */
  modelName?: string;
  /** Neuronpedia's id for this SAE ("gpt2-small/8-res-jb"), when the config or a known release names it. */
  neuronpediaId?: string;
  /** Which layout the config was read from. */
  layout: 'sae_lens' | 'sae_lens_v6' | 'gemma_scope';
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
/**
 * A config value as a message shows it: JSON, except a number JSON cannot write (1e400 parses as
 * Infinity, which JSON.stringify prints as null) is named as not finite.
 */
export const shown = (x: unknown): string => (typeof x === 'number' && !Number.isFinite(x) ? `${x}, not a finite number` : JSON.stringify(x));
const posInt = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) > 0;

/**
 * Reads a SAELens cfg.json (flat ≤ 5 layout, or the ≥ 6 layout with `metadata`).
 * @param label names the file in messages.
 * @throws Error naming the key for a missing or malformed field, an unknown or unsupported
 *   architecture (gated, …), a TopK without k, or a normalize_activations other than "none".
 */
export function parseSaeLensConfig(json: unknown, label = 'cfg.json'): SaeConfig {
  const fail = (msg: string): never => { throw new Error(`${label}: ${msg}`); };
  if (!isObj(json)) return fail('is not a JSON object');
  const meta = isObj(json.metadata) ? json.metadata : undefined;
  const field = (k: string): unknown => json[k] ?? meta?.[k];
  const dIn = json.d_in, dSae = json.d_sae;
  if (!posInt(dIn)) fail(`"d_in" must be a positive integer (got ${shown(dIn)})`);
  if (!posInt(dSae)) fail(`"d_sae" must be a positive integer (got ${shown(dSae)})`);
  const hookName = field('hook_name');
  if (typeof hookName !== 'string' || hookName === '') fail('"hook_name" is missing (SAELens ≤ 5 keeps it at the top level, ≥ 6 under "metadata")');
  if (field('hook_head_index') !== undefined && field('hook_head_index') !== null) fail(`"hook_head_index" ${shown(field('hook_head_index'))}: SAEs on one head are not supported`);
  let arch = json.architecture ?? 'standard';
  const actFn = json.activation_fn_str;
  let k: number | undefined;
  if (arch === 'standard' && actFn === 'topk') {
    arch = 'topk';
    k = (json.activation_fn_kwargs as Record<string, unknown> | undefined)?.k as number;
  } else if (arch === 'topk') {
    k = (json.k ?? (json.activation_fn_kwargs as Record<string, unknown> | undefined)?.k) as number;
  }
  if (!(SAE_ARCHITECTURES as readonly unknown[]).includes(arch)) {
    fail(`architecture ${shown(arch)} is not supported (supported: ${SAE_ARCHITECTURES.join(', ')})`);
  }
  if (arch === 'standard' && actFn !== undefined && actFn !== 'relu') fail(`activation_fn_str ${shown(actFn)} is not supported for a standard SAE (relu, or topk with activation_fn_kwargs.k)`);
  if (arch === 'topk' && !posInt(k)) fail(`a topk SAE needs a positive integer k (got ${shown(k)})`);
  if (arch === 'topk' && (k as number) > (dSae as number)) fail(`k = ${k} is larger than d_sae = ${dSae}`);
  const norm = json.normalize_activations ?? 'none';
  if (norm !== 'none') fail(`normalize_activations ${shown(norm)} is not supported (only "none": the SAE reads the raw activation)`);
  const apply = json.apply_b_dec_to_input;
  if (apply !== undefined && typeof apply !== 'boolean') fail(`"apply_b_dec_to_input" must be true or false (got ${shown(apply)})`);
  const modelName = field('model_name');
  const np = field('neuronpedia_id');
  return {
    architecture: arch as SaeArchitecture,
    dIn: dIn as number, dSae: dSae as number, hookName: hookName as string,
    ...(k !== undefined ? { k } : {}),
    // SAELens' default: standard and topk subtract b_dec, jumprelu configs say so explicitly.
    applyBDecToInput: apply === undefined ? arch !== 'jumprelu' : (apply as boolean),
    normalizeActivations: 'none',
    ...(typeof modelName === 'string' ? { modelName } : {}),
    ...(typeof np === 'string' && np !== '' ? { neuronpediaId: np } : {}),
    layout: meta ? 'sae_lens_v6' : 'sae_lens',
  };
}

/** Gemma Scope's Hub layout: `google/gemma-scope-{2b,9b,27b}-pt-{res,mlp,att}[-canonical]/layer_L/width_W/…`. */
const GEMMA_SCOPE_PATH = /gemma-scope-(2b|9b|27b)-pt-(res|mlp|att)[^/]*\/layer_(\d+)\/width_(\w+)\//;

/** The hook a Gemma Scope site reads (SAELens `get_gemma_2_config_from_hf`): res → resid_post, mlp → mlp_out, att → attn.hook_z. */
const GEMMA_SCOPE_HOOK: Record<string, string> = { res: 'hook_resid_post', mlp: 'hook_mlp_out', att: 'attn.hook_z' };

/**
 * The hook and Neuronpedia id implied by a Gemma Scope Hub path, e.g.
 * "google/gemma-scope-2b-pt-res/layer_12/width_16k/average_l0_82/params.npz" →
 * blocks.12.hook_resid_post, "gemma-2-2b/12-gemmascope-res-16k".
 * @returns null when the path is not in the Gemma Scope layout.
 */
export function gemmaScopeSite(path: string): { hookName: string; neuronpediaId: string } | null {
  const m = GEMMA_SCOPE_PATH.exec(path.endsWith('/') ? path : path + '/');
  if (!m) return null;
  const [, size, site, layer, width] = m;
  return { hookName: `blocks.${layer}.${GEMMA_SCOPE_HOOK[site]}`, neuronpediaId: `gemma-2-${size}/${layer}-gemmascope-${site}-${width}` };
}

/**
 * The config of a Gemma Scope params.npz: JumpReLU, apply_b_dec_to_input false, widths from the
 * arrays, hook as given (or read from the path by gemmaScopeSite).
 */
export function gemmaScopeConfig(dIn: number, dSae: number, hookName: string, neuronpediaId?: string): SaeConfig {
  return {
    architecture: 'jumprelu', dIn, dSae, hookName, applyBDecToInput: false, normalizeActivations: 'none',
    ...(neuronpediaId ? { neuronpediaId } : {}), layout: 'gemma_scope',
  };
}

/**
 * A feature's page on Neuronpedia, for SAEs whose config (SAELens `neuronpedia_id`) or Hub path
 * (Gemma Scope) names a Neuronpedia release; undefined otherwise. Only a link: nothing is fetched.
 */
export function neuronpediaUrl(cfg: SaeConfig, feature: number): string | undefined {
  return cfg.neuronpediaId ? `https://www.neuronpedia.org/${cfg.neuronpediaId}/${feature}` : undefined;
}
