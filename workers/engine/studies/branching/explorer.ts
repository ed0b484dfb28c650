/**
 * Branch explorer (DESIGN.md §3 "Fork points"; Bigelow et al. arXiv 2412.07961, "forking tokens"):
 * generate a trunk, then fork it at any prompt or generated position by forcing another token
 * there and continuing to the trunk's end. Every run goes through one PrefixCache
 * (model/kv_prefix.ts), so a fork computes only its own positions: the shared prefix is read from
 * the KV cache, and `TreeNode.forwarded` counts what was pushed through the model.
 *
 * Interventions on a fork act on its own forward passes (positions from the fork on); the prefix
 * keeps the activations its owner computed, steered or not. A fork from a prompt position t makes
 * prompt[0..t) + forced token the fork's prompt (n_prompt = t + 1, so its steps count from there).
 */
import type { Engine } from '../../engine';
import type { FutureInput, PromptInput, ResolvedFuture } from '../../prompt';
import { PrefixCache } from '../../model/kv_prefix';
import { type SpanOptions, type SpanOutput } from '../../model/span';
import { selectRows, type Intervention } from '../../model/intervention';
import { lensColumnLogits } from '../../model/lens';
import { rowMargin } from '../../analysis/margin';
import { sampleToken, seededRandom } from '../../analysis/sampling';
import { entropy, topIds } from '../../analysis/distribution';
import { logSoftmaxCpu } from '../../ops/logits.cpu';
import { contextMessage } from '../../model/transformer';
import { nodeOf, pathOf, treePrompt, TREE_VERSION, type BranchTree, type DrawSettings, type TopTokens, type TreeFuture, type TreeNode, type TreePath } from './tree';

export interface ExploreRequest extends PromptInput {
  good: FutureInput;
  bad: FutureInput;
  /** New tokens of the trunk; every fork continues to the same end position. */
  maxNewTokens: number;
  /** Alternatives kept per position (default 5). */
  topK?: number;
  /** Stop a run at an eos_token_id from config.json (default true). */
  stopAtEos?: boolean;
}

/** One token as it is chosen, for streaming. */
export interface BranchTokenEvent {
  node: number;
  position: number;
  id: number;
  token: string;
  margin: number;
  logProb: number;
  /**
   * Seconds this token's forward pass and draw took in the worker (0 when its logits came with the
   * prompt pass): the work a fork-points continuation repeats per token (forks.ts), without the
   * token strings and top alternatives a tree node keeps. lib/fork_estimate.ts times estimates by it.
   */
  seconds: number;
}

/** Lens margins at one position: Δ^l = log p^l(chosen) − log p^l(alternative) for every layer row. */
export interface LensMargins {
  position: number;
  chosen: number;
  alternatives: number[];
  /** [alternative][layer row 0..n_layers] (row 0 = embeddings, as in the margin heatmap). */
  margins: number[][];
}

/** Per node, what the cache needs to recompute its positions: its interventions and n_prompt. */
interface RunShape { interventions: Intervention[]; nPrompt: number }

/** Owner id of the rows of a resampled continuation (not a node of the tree). */
const RESAMPLED = -2;

/** Yields a macrotask so a cancel message is handled between tokens. */
const tick = () => new Promise<void>((r) => setTimeout(r, 0));

/**
 * An intervention restricted to absolute positions [from, end): its position selector made
 * explicit, step window unchanged.
 */
function fromPosition(iv: Intervention, from: number, end: number, nPrompt: number): Intervention {
  const positions: number[] = [];
  for (let p = from; p < end; p++) if (selectRows(iv.positions, { pos0: p, n: 1, nPrompt, step: 0 })[0]) positions.push(p);
  return { ...iv, positions };
}

/**
 * The first token of `text` as it reads after `prefixIds` (encode(decode(prefix) + text), the ids
 * after the prefix's), else of `text` on its own: " dog" after "… gave the ball to" is the id it has
 * in running text.
 * @throws Error for text that gives no token.
 */
export function firstTokenInContext(engine: Engine, prefixIds: readonly number[], text: string): number {
  const prompt = engine.tokenizer.decode([...prefixIds], { skip_special_tokens: true });
  return engine.resolveFuture(prefixIds, { text }, { prompt }).sequences[0][0];
}

/**
 * A future as a tree names it (BranchTree.good): a text future as written, a tool call alone as
 * name(arguments JSON), else its tokens as they read, alternatives joined by " | ".
 */
export function futureName(input: FutureInput, resolved: ResolvedFuture): string {
  if (input.text !== undefined && !input.ids && !input.toolCall) return input.text;
  if (input.toolCall && !input.ids && !input.text) return `${input.toolCall.name}(${JSON.stringify(input.toolCall.arguments)})`;
  return resolved.tokens.map((t) => t.join('')).join(' | ');
}

/** The sequences of two resolutions are the same ids. */
const sameSequences = (a: readonly number[][], b: readonly number[][]) => a.length === b.length && a.every((s, i) => s.length === b[i].length && s.every((id, j) => id === b[i][j]));

export class BranchExplorer {
  private readonly kv: PrefixCache;
  private readonly shapes = new Map<number, RunShape>();
  /** Token and computing node of each KV-cache row this explorer wrote (valid while kv.validRows covers them). */
  private rowIds: number[] = [];
  private rowOwner: number[] = [];
  private constructor(private readonly engine: Engine, readonly tree: BranchTree, private readonly req: ExploreRequest, private readonly good: ResolvedFuture, private readonly bad: ResolvedFuture) {
    this.kv = new PrefixCache(engine.model);
  }

  /** The token sequences the margins are of (the tree's futures resolved after its prompt). */
  get futureIds(): { good: number[][]; bad: number[][] } {
    return { good: this.good.sequences.map((s) => [...s]), bad: this.bad.sequences.map((s) => [...s]) };
  }

  /** Absolute end position (exclusive) of every path. */
  get end(): number { return this.tree.promptIds.length + this.tree.maxNewTokens; }

  private get k(): number { return Math.min(this.req.topK ?? 5, this.engine.spec.dVocab); }

  private top(lp: Float32Array, prefix: readonly number[]): TopTokens {
    const t = topIds(lp, this.k);
    return { ids: t.ids, logProbs: t.logProbs, tokens: t.ids.map((id) => this.engine.tokenStrings([id], prefix)[0]) };
  }

  /**
   * Starts a tree: generates the trunk (the prompt pass with its per-position alternatives, then
   * maxNewTokens tokens).
   * @param interventions act on the whole trunk when draw.steered.
   * @throws Error for a bad prompt or future, or a prompt plus maxNewTokens longer than the context.
   */
  static async start(engine: Engine, req: ExploreRequest, draw: DrawSettings, interventions: readonly Intervention[] = [], modelLabel = engine.label, onToken?: (e: BranchTokenEvent) => void, signal?: AbortSignal): Promise<BranchExplorer> {
    if (!Number.isInteger(req.maxNewTokens) || req.maxNewTokens < 1) throw new Error(`max new tokens must be a positive integer (got ${req.maxNewTokens})`);
    const promptIds = engine.encodePrompt(req);
    const T = promptIds.length;
    if (T + req.maxNewTokens > engine.model.contextLength) throw new Error(`prompt plus new tokens: ${contextMessage(T + req.maxNewTokens, engine.spec.nCtx, engine.model.contextLength)}`);
    const nan = promptIds.map(() => NaN);
    const good = engine.resolveFuture(promptIds, req.good, req, 'good');
    const bad = engine.resolveFuture(promptIds, req.bad, req, 'bad');
    const kept = (input: FutureInput, r: ResolvedFuture): TreeFuture => ({ input: structuredClone(input), sequences: r.sequences.map((s) => [...s]) });
    const tree: BranchTree = {
      version: TREE_VERSION, model: modelLabel, prompt: req.prompt, chatTemplate: req.chatTemplate ?? false,
      ...(req.system !== undefined ? { system: req.system } : {}), ...(req.tools?.length ? { tools: req.tools } : {}),
      ...(req.enableThinking !== undefined ? { enableThinking: req.enableThinking } : {}),
      promptIds, promptTokens: engine.tokenStrings(promptIds), good: futureName(req.good, good), bad: futureName(req.bad, bad),
      futures: { good: kept(req.good, good), bad: kept(req.bad, bad) },
      maxNewTokens: req.maxNewTokens,
      promptStats: { logProbs: [...nan], margins: [...nan], entropy: [...nan], top: promptIds.map(() => ({ ids: [], tokens: [], logProbs: [] })) },
      nodes: [],
    };
    const x = new BranchExplorer(engine, tree, req, good, bad);
    const shape: RunShape = { interventions: draw.steered ? [...interventions] : [], nPrompt: T };
    const root: TreeNode = { id: 0, parent: null, start: T, ids: [], tokens: [], logProbs: [], margins: [], entropy: [], top: [], settings: { ...draw }, stop: 'length', forwarded: 0 };
    tree.nodes.push(root);
    x.shapes.set(0, shape);
    // The prompt pass, with every row's logits: what the model predicted at each prompt token.
    const out = await x.run(() => 0, promptIds, 0, { logits: 'all' });
    root.forwarded += T - out.from;
    const V = engine.spec.dVocab;
    for (let t = 1; t < T; t++) {
      const lp = logSoftmaxCpu(out.logits!.subarray((t - 1) * V, t * V), V);
      const s = tree.promptStats;
      s.logProbs[t] = lp[promptIds[t]];
      s.margins[t] = rowMargin(lp, x.good.firstIds, x.bad.firstIds);
      s.entropy[t] = entropy(lp);
      s.top[t] = x.top(lp, promptIds.slice(0, t));
    }
    const last = logSoftmaxCpu(out.logits!.subarray((T - 1) * V, T * V), V);
    await x.continueNode(root, () => 0, [...promptIds], last, onToken, signal);
    return x;
  }

  /**
   * Re-opens an exported tree (validated with validateTree) on this engine: no model run until the
   * next fork, which recomputes the path it forks from (steered nodes under `interventions`). The
   * futures are the tree's own, as they were given (text, ids or a tool call); a tree read from a
   * version-1 file gets their sequences recorded here.
   * @throws Error when the tree's prompt does not tokenize to its promptIds on this model, or a
   *   future does not resolve to the sequences the tree recorded for it.
   */
  static restore(engine: Engine, tree: BranchTree, interventions: readonly Intervention[] = [], topK = 5): BranchExplorer {
    const ids = engine.encodePrompt(tree);
    if (ids.join() !== tree.promptIds.join()) throw new Error(`the tree's prompt tokenizes differently on ${engine.label}: was it made with another model (${tree.model})?`);
    const req: ExploreRequest = { ...treePrompt(tree), good: tree.futures.good.input, bad: tree.futures.bad.input, maxNewTokens: tree.maxNewTokens, topK };
    const resolved = (which: 'good' | 'bad'): ResolvedFuture => {
      const f = tree.futures[which];
      const r = engine.resolveFuture(tree.promptIds, f.input, req, which);
      if (f.sequences && !sameSequences(f.sequences, r.sequences)) throw new Error(`the tree's ${which} future resolves to other tokens on ${engine.label} than it recorded: was it made with another model (${tree.model})?`);
      f.sequences = r.sequences.map((s) => [...s]);
      return r;
    };
    const x = new BranchExplorer(engine, tree, req, resolved('good'), resolved('bad'));
    for (const n of tree.nodes) x.shapes.set(n.id, x.shapeFor(n, interventions));
    return x;
  }

  /** The run shape of a node: n_prompt from its start, interventions clipped to its own positions. */
  private shapeFor(n: TreeNode, interventions: readonly Intervention[]): RunShape {
    const T = this.tree.promptIds.length;
    const nPrompt = n.parent === null || n.start >= T ? T : n.start + 1;
    if (!n.settings.steered) return { interventions: [], nPrompt };
    return { interventions: n.parent === null ? [...interventions] : interventions.map((iv) => fromPosition(iv, n.start, this.end, nPrompt)), nPrompt };
  }

  /** Which node computed the cache row at position t of a path: the node that holds t (the trunk in the prompt). */
  private static owner(path: TreePath, t: number): number {
    return path.node[t] === -1 ? 0 : path.node[t];
  }

  /** The owners of a path's rows, and of a new node's from its start on. */
  private static owners(path: TreePath, node?: { id: number; start: number }): (t: number) => number {
    return (t) => (node && t >= node.start ? node.id : BranchExplorer.owner(path, t));
  }

  /**
   * Runs `ids` computing what the cache lacks: rows are reused while they hold the same token
   * computed by the node `ownerAt` names for that position (rowIds / rowOwner); the rest is
   * computed under the shape of `owner` and recorded as its.
   */
  private async run(ownerAt: (t: number) => number, ids: readonly number[], owner: number, opts: Pick<SpanOptions, 'logits' | 'capture'>): Promise<SpanOutput & { from: number }> {
    const valid = Math.min(this.kv.validRows, this.rowOwner.length);
    let p = 0;
    while (p < valid && p < ids.length && this.rowIds[p] === ids[p] && this.rowOwner[p] === ownerAt(p)) p++;
    const out = await this.kv.advance(p, ids, { ...this.shapes.get(owner)!, ...opts });
    this.rowIds = [...ids];
    this.rowOwner = [...this.rowOwner.slice(0, out.from), ...ids.slice(out.from).map(() => owner)];
    return out;
  }

  /**
   * Makes the KV cache hold positions [0, upTo) of node `id`'s path, each row computed by the node
   * that owns it (under that node's interventions); only what the cache lacks is computed.
   * @returns the positions computed.
   */
  private async ensurePath(path: TreePath, upTo: number): Promise<number> {
    let computed = 0;
    for (let a = 0; a < upTo;) {
      const owner = BranchExplorer.owner(path, a);
      let b = a + 1;
      while (b < upTo && BranchExplorer.owner(path, b) === owner) b++;
      const out = await this.run(BranchExplorer.owners(path), path.ids.slice(0, b), owner, { logits: 'none' });
      computed += b - out.from;
      a = b;
    }
    return computed;
  }

  /**
   * Forks node `from` at absolute position `position` by forcing `tokenId` there, and continues to
   * the trunk's end (greedy or seeded sampling as `draw` says).
   * @param interventions act on the fork's own forward passes when draw.steered.
   * @returns the new node (also added to the tree).
   * @throws Error for a position outside 1..end of that path, the token already there, or an id outside the vocabulary.
   */
  async fork(from: number, position: number, tokenId: number, draw: DrawSettings, interventions: readonly Intervention[] = [], onToken?: (e: BranchTokenEvent) => void, signal?: AbortSignal): Promise<TreeNode> {
    const path = pathOf(this.tree, from);
    if (!Number.isInteger(position) || position < 1 || position >= path.ids.length) throw new Error(`a fork needs a position between 1 and ${path.ids.length - 1} (the tokens of that branch after the first)`);
    if (!Number.isInteger(tokenId) || tokenId < 0 || tokenId >= this.engine.spec.dVocab) throw new Error(`token id ${tokenId} is outside the vocabulary [0, ${this.engine.spec.dVocab})`);
    if (path.ids[position] === tokenId) throw new Error(`“${path.tokens[position]}” is already the token at position ${position}: pick another alternative`);
    const owner = path.node[position] === -1 ? 0 : path.node[position];
    const parentId = position >= nodeOf(this.tree, owner).start ? owner : 0;
    const prefix = path.ids.slice(0, position);
    const node: TreeNode = {
      id: Math.max(...this.tree.nodes.map((n) => n.id)) + 1, parent: parentId, start: position,
      ids: [tokenId], tokens: this.engine.tokenStrings([tokenId], prefix), logProbs: [], margins: [path.margins[position]], entropy: [path.entropy[position]],
      top: [path.top[position] ?? { ids: [], tokens: [], logProbs: [] }], settings: { ...draw }, stop: 'length', forwarded: 0,
    };
    node.forwarded += await this.ensurePath(path, position);
    let lpForced = node.top[0].ids.includes(tokenId) ? node.top[0].logProbs[node.top[0].ids.indexOf(tokenId)] : NaN;
    if (Number.isNaN(lpForced)) {
      // not among the kept alternatives: read the distribution at position − 1 again
      const out = await this.run(BranchExplorer.owners(path), prefix, BranchExplorer.owner(path, position - 1), { logits: 'last' });
      node.forwarded += prefix.length - out.from;
      lpForced = logSoftmaxCpu(out.logits!, out.logits!.length)[tokenId];
    }
    node.logProbs.push(lpForced);
    this.tree.nodes.push(node);
    this.shapes.set(node.id, this.shapeFor(node, interventions));
    onToken?.({ node: node.id, position, id: tokenId, token: node.tokens[0], margin: node.margins[0], logProb: lpForced, seconds: 0 });
    if (position + 1 < this.end) await this.continueNode(node, BranchExplorer.owners(path, node), [...prefix, tokenId], null, onToken, signal);
    return node;
  }

  /**
   * Draws tokens after `ids` until the end position, eos or cancel, appending to `node`.
   * @param first log-probs of the next token when already computed (the trunk's prompt pass), else null.
   */
  private async continueNode(node: TreeNode, ownerAt: (t: number) => number, ids: number[], first: Float32Array | null, onToken?: (e: BranchTokenEvent) => void, signal?: AbortSignal, end = this.end): Promise<void> {
    const rand = seededRandom(node.settings.seed);
    const eos = this.req.stopAtEos === false ? [] : this.engine.spec.eosTokenIds;
    if (eos.includes(ids[ids.length - 1]) && node.parent !== null) { node.stop = 'eos'; return; }
    let lp = first;
    while (ids.length < end) {
      await tick();
      if (signal?.aborted) { node.stop = 'cancelled'; return; }
      const t0 = performance.now(), forward = !lp;
      if (!lp) {
        const out = await this.run(ownerAt, ids, node.id, { logits: 'last' });
        node.forwarded += ids.length - out.from;
        lp = logSoftmaxCpu(out.logits!, out.logits!.length);
      }
      const id = sampleToken(lp, node.settings.temperature, node.settings.topK, rand);
      const margin = rowMargin(lp, this.good.firstIds, this.bad.firstIds);
      const seconds = forward ? (performance.now() - t0) / 1000 : 0;
      const token = onToken || this.tree.nodes.includes(node) ? this.engine.tokenStrings([id], ids)[0] : '';
      node.ids.push(id); node.tokens.push(token); node.logProbs.push(lp[id]); node.margins.push(margin);
      node.entropy.push(entropy(lp)); node.top.push(this.tree.nodes.includes(node) ? this.top(lp, ids) : { ids: [], tokens: [], logProbs: [] });
      onToken?.({ node: node.id, position: ids.length, id, token, margin, logProb: lp[id], seconds });
      ids.push(id);
      lp = null;
      if (eos.includes(id)) { node.stop = 'eos'; return; }
    }
    node.stop = 'length';
  }

  /**
   * One resampled continuation for the fork-point measurement (forks.ts), not added to the tree:
   * forces `tokenId` at `position` of node `from`'s path (it may be the token already there), draws
   * up to `horizon` tokens after it, and returns the outcome margin Δ = log p(good) − log p(bad) of
   * the next token after the continuation (first-token sets, final layer).
   * @returns the continuation's ids (forced token first) and the outcome margin.
   */
  async resample(from: number, position: number, tokenId: number, draw: DrawSettings, horizon: number, interventions: readonly Intervention[] = []): Promise<{ ids: number[]; outcome: number; forwarded: number }> {
    const path = pathOf(this.tree, from);
    const prefix = path.ids.slice(0, position);
    const tmp: TreeNode = { id: RESAMPLED, parent: BranchExplorer.owner(path, position), start: position, ids: [tokenId], tokens: [''], logProbs: [NaN], margins: [NaN], entropy: [NaN], top: [{ ids: [], tokens: [], logProbs: [] }], settings: { ...draw }, stop: 'length', forwarded: 0 };
    this.shapes.set(RESAMPLED, this.shapeFor(tmp, interventions));
    try {
      tmp.forwarded += await this.ensurePath(path, position);
      const ids = [...prefix, tokenId];
      const end = Math.min(this.end, position + 1 + horizon);
      const ownerAt = BranchExplorer.owners(path, tmp);
      await this.continueNode(tmp, ownerAt, ids, null, undefined, undefined, end);
      const out = await this.run(ownerAt, ids, RESAMPLED, { logits: 'last' });
      tmp.forwarded += ids.length - out.from;
      const lp = logSoftmaxCpu(out.logits!, out.logits!.length);
      return { ids: tmp.ids, outcome: rowMargin(lp, this.good.firstIds, this.bad.firstIds), forwarded: tmp.forwarded };
    } finally {
      this.shapes.delete(RESAMPLED);
    }
  }

  /**
   * The logit lens at the distribution that predicts `position` on node `id`'s path (DESIGN.md §3,
   * nostalgebraist 2020; LN_f recomputed per vector): for each alternative, Δ^l = log p^l(chosen)
   * − log p^l(alternative) at every layer row, chosen = the path's token at `position`.
   * @throws Error for a position outside 1..end of that path.
   */
  async lensMargins(id: number, position: number, alternatives: readonly number[]): Promise<LensMargins> {
    const path = pathOf(this.tree, id);
    if (!Number.isInteger(position) || position < 1 || position >= path.ids.length) throw new Error(`position ${position} is outside 1..${path.ids.length - 1}`);
    const s = this.engine.spec, L = s.nLayers, b = this.engine.backend;
    const names = ['blocks.0.hook_resid_pre', ...Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_post`)];
    await this.ensurePath(path, position - 1);
    const out = await this.run(BranchExplorer.owners(path), path.ids.slice(0, position), BranchExplorer.owner(path, position - 1), { logits: 'none', capture: names });
    const stack = new Float32Array((L + 1) * s.dModel);
    names.forEach((n, r) => { const c = out.captured.get(n)!; stack.set(c.subarray(c.length - s.dModel), r * s.dModel); });
    const chosen = path.ids[position];
    const cols = [chosen, ...alternatives];
    const t = b.upload(stack, [L + 1, s.dModel]);
    try {
      // log p(chosen) − log p(alt) = logit(chosen) − logit(alt): only these columns of W_U are needed (model/lens.ts).
      const logits = lensColumnLogits(this.engine.model, t, cols);
      const g = await b.read(logits);
      b.release(logits);
      const c = cols.length;
      return { position, chosen, alternatives: [...alternatives], margins: alternatives.map((_, a) => Array.from({ length: L + 1 }, (_, l) => g[l * c] - g[l * c + 1 + a])) };
    } finally {
      b.release(t);
    }
  }
}
