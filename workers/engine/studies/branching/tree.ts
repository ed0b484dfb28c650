/**
 * The branch tree of one prompt (DESIGN.md §3 "Fork points": reasoning as a tree of local
 * decisions). A node is a run of tokens; the root is the trunk generation, every other node forks
 * from its parent at one absolute position by forcing another token there and continuing to the
 * trunk's end. Positions are absolute (prompt tokens 0..T−1, new token k at T + k), so a fork from
 * a prompt token and a fork from a generated token are the same thing. Plain JSON: exported,
 * restored, and sent between the worker and the UI as it is.
 *
 * File versions: 2 keeps each future as the request gave it (text, token ids or a tool call) with
 * the token sequences it resolved to; 1 kept only a future's text (an id or tool-call future was
 * written as ""). validateTree reads both and gives version 2.
 */
import { promptWith, type FutureInput, type PromptInput } from '../../prompt';

/** How a node's continuation was drawn. */
export interface DrawSettings {
  /** 0 = greedy (first maximum on ties). */
  temperature: number;
  /** Sample among the k most likely tokens (0 = all). */
  topK: number;
  seed: number;
  /** The active interventions acted on this node's own forward passes (from its fork on). */
  steered: boolean;
}

/** The most likely tokens of one distribution, in decreasing probability. */
export interface TopTokens {
  ids: number[];
  tokens: string[];
  logProbs: number[];
}

export interface TreeNode {
  id: number;
  /** null for the trunk. */
  parent: number | null;
  /** Absolute position of this node's first token (the forced token of a fork; T for the trunk). */
  start: number;
  ids: number[];
  tokens: string[];
  /**
   * Per token of this node, from the distribution at the position before it (for a fork's first
   * token, its parent's distribution there): log p of the token [nats], the margin Δ = log p(good) −
   * log p(bad) of the experiment's futures, the entropy H [nats], and the top alternatives.
   */
  logProbs: number[];
  margins: number[];
  entropy: number[];
  top: TopTokens[];
  settings: DrawSettings;
  stop: 'length' | 'eos' | 'context' | 'cancelled';
  /** Positions this node's run pushed through the model (the shared prefix reused from the KV cache is not counted). */
  forwarded: number;
}

/** The version validateTree gives and BranchExplorer writes. */
export const TREE_VERSION = 2;

/** One of a tree's futures: as the request gave it, and the token sequences it resolved to after the tree's prompt. */
export interface TreeFuture {
  /** The future as written: text (alternatives "|"), token-id sequences, or a tool call (prompt.ts FutureInput). */
  input: FutureInput;
  /**
   * Its token sequences after the prompt (ResolvedFuture.sequences), the ids the margins are of;
   * absent only in a tree read from a version-1 file until BranchExplorer.restore resolves them.
   */
  sequences?: number[][];
}

export interface BranchTree {
  version: 2;
  model: string;
  prompt: string;
  chatTemplate: boolean;
  /** With the chat template: the system prompt and tools the prompt was rendered with (PromptInput); absent: none. */
  system?: string;
  tools?: Record<string, unknown>[];
  /** With the chat template: the enable_thinking the prompt was rendered with (PromptInput.enableThinking); absent: the template's default. */
  enableThinking?: boolean;
  promptIds: number[];
  promptTokens: string[];
  /**
   * The futures as the views name them: a text future as written, a tool call as name(arguments),
   * an id future as its tokens read (alternatives joined by " | "). The margins are of `futures`, never re-read from these.
   */
  good: string;
  bad: string;
  /** The futures the margins Δ = log p(good) − log p(bad) are of, as given (version 2). */
  futures: { good: TreeFuture; bad: TreeFuture };
  /** Every path ends at absolute position promptIds.length + maxNewTokens − 1 (or earlier at eos). */
  maxNewTokens: number;
  /**
   * The prompt's own tokens as the model read them, index = position (entry 0 has no distribution:
   * NaN and an empty top): log p of the token, Δ, entropy and the alternatives predicted there.
   */
  promptStats: { logProbs: number[]; margins: number[]; entropy: number[]; top: TopTokens[] };
  nodes: TreeNode[];
}

/** A node by id. @throws Error for an id the tree does not have. */
export function nodeOf(tree: BranchTree, id: number): TreeNode {
  const n = tree.nodes.find((x) => x.id === id);
  if (!n) throw new Error(`the tree has no node ${id}`);
  return n;
}

/** The nodes from the trunk down to `id`. */
export function lineage(tree: BranchTree, id: number): TreeNode[] {
  const out: TreeNode[] = [];
  for (let n: TreeNode | null = nodeOf(tree, id); n; n = n.parent === null ? null : nodeOf(tree, n.parent)) out.unshift(n);
  return out;
}

/** One path through the tree, position by position from the start of the prompt. */
export interface TreePath {
  /** Token ids at absolute positions 0..end−1 (prompt included). */
  ids: number[];
  tokens: string[];
  /** Per position (index = position): the node that holds it (−1 in the prompt) and its values (NaN / null at position 0). */
  node: number[];
  logProbs: number[];
  margins: number[];
  entropy: number[];
  top: (TopTokens | null)[];
}

/**
 * The full sequence of node `id`: the prompt, each ancestor's tokens up to where its child forks,
 * then the node's own tokens.
 */
export function pathOf(tree: BranchTree, id: number): TreePath {
  const ps = tree.promptStats;
  const p: TreePath = {
    ids: [...tree.promptIds], tokens: [...tree.promptTokens], node: tree.promptIds.map(() => -1),
    logProbs: [...ps.logProbs], margins: [...ps.margins], entropy: [...ps.entropy],
    top: ps.top.map((t, i) => (i > 0 ? t : null)),
  };
  for (const n of lineage(tree, id)) {
    for (const k of ['ids', 'tokens', 'node', 'logProbs', 'margins', 'entropy', 'top'] as const) (p[k] as unknown[]).length = n.start;
    p.ids.push(...n.ids); p.tokens.push(...n.tokens); p.node.push(...n.ids.map(() => n.id));
    p.logProbs.push(...n.logProbs); p.margins.push(...n.margins); p.entropy.push(...n.entropy); p.top.push(...n.top);
  }
  return p;
}

/** The forking edge into a node: its forced token and that token's probability in the parent's distribution. */
export function forkEdge(n: TreeNode): { token: string; id: number; prob: number } {
  return { token: n.tokens[0] ?? '', id: n.ids[0], prob: Math.exp(n.logProbs[0]) };
}

const isIdList = (x: unknown): x is number[] => Array.isArray(x) && x.length > 0 && x.every((id) => Number.isInteger(id) && id >= 0);
const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** A version-2 file's future, checked. @throws Error naming the future and what is wrong with it. */
function checkFuture(which: 'good' | 'bad', x: unknown): TreeFuture {
  const where = `futures.${which}`;
  if (!isObject(x) || !isObject(x.input)) throw new Error(`${where} must be an object with the future as given in "input"`);
  const f = x.input;
  const kinds = (['text', 'ids', 'toolCall'] as const).filter((k) => f[k] !== undefined);
  if (kinds.length === 0) throw new Error(`${where}.input must hold text, ids or a toolCall (their alternatives together form the future)`);
  if (f.text !== undefined && (typeof f.text !== 'string' || f.text === '')) throw new Error(`${where}.input.text must be non-empty text`);
  if (f.ids !== undefined && (!Array.isArray(f.ids) || f.ids.length === 0 || !f.ids.every(isIdList))) throw new Error(`${where}.input.ids must be a list of token-id sequences (non-negative integers)`);
  if (f.toolCall !== undefined && (!isObject(f.toolCall) || typeof f.toolCall.name !== 'string' || !isObject(f.toolCall.arguments))) throw new Error(`${where}.input.toolCall must be {"name": text, "arguments": object}`);
  if (x.sequences !== undefined && (!Array.isArray(x.sequences) || x.sequences.length === 0 || !x.sequences.every(isIdList))) throw new Error(`${where}.sequences must be the token-id sequences the future resolved to`);
  return x as unknown as TreeFuture;
}

/** A version-1 file's future (text only), as version 2 holds it. @throws Error when it has no text: version 1 wrote an id or tool-call future as "". */
function textFuture(which: 'good' | 'bad', text: unknown): TreeFuture {
  if (typeof text !== 'string' || text === '') throw new Error(`this version-1 tree has no ${which} future: version 1 kept only text futures and wrote an id or tool-call future as "", so its margins cannot be continued; grow the tree again (version 2 keeps every future)`);
  return { input: { text } };
}

/**
 * Checks a tree read from a file before it is shown (restoring an export); a version-1 tree is
 * given as version 2, its text futures as `futures` (their sequences resolved by BranchExplorer.restore).
 * @throws Error saying what is wrong: not a version-1 or -2 tree, a future that is missing or
 *   malformed, a node whose parent is missing or comes later, a fork outside its parent's span,
 *   arrays of unequal length.
 */
export function validateTree(x: unknown): BranchTree {
  const raw = x as Omit<BranchTree, 'version'> & { version: unknown };
  if (typeof raw !== 'object' || raw === null || (raw.version !== 1 && raw.version !== TREE_VERSION) || !Array.isArray(raw.nodes) || !Array.isArray(raw.promptIds)) {
    throw new Error('not a Branchpoint branch tree (version 1 or 2 JSON with promptIds and nodes)');
  }
  if (typeof raw.good !== 'string' || typeof raw.bad !== 'string') throw new Error('good and bad must be text (the futures as the views name them)');
  const futures = raw.version === 1
    ? { good: textFuture('good', raw.good), bad: textFuture('bad', raw.bad) }
    : isObject(raw.futures) ? { good: checkFuture('good', raw.futures.good), bad: checkFuture('bad', raw.futures.bad) } : null;
  if (!futures) throw new Error('a version-2 tree must hold its futures ("futures": {"good", "bad"})');
  const t: BranchTree = { ...raw, version: TREE_VERSION, futures };
  const ps = t.promptStats;
  if (!ps || (['logProbs', 'margins', 'entropy', 'top'] as const).some((k) => !Array.isArray(ps[k]) || ps[k].length !== t.promptIds.length)) throw new Error('promptStats must hold one entry per prompt token');
  if (t.system !== undefined && typeof t.system !== 'string') throw new Error('system must be text (the system prompt the tree\'s prompt was rendered with)');
  if (t.tools !== undefined && (!Array.isArray(t.tools) || t.tools.some((x) => typeof x !== 'object' || x === null || Array.isArray(x)))) throw new Error('tools must be a list of tool objects (the tools the tree\'s prompt was rendered with)');
  if (t.enableThinking !== undefined && typeof t.enableThinking !== 'boolean') throw new Error('enableThinking must be true or false (the enable_thinking the tree\'s prompt was rendered with)');
  if (t.nodes.length === 0 || t.nodes[0].parent !== null) throw new Error('the tree has no trunk (its first node must have parent null)');
  const seen = new Map<number, TreeNode>();
  for (const n of t.nodes) {
    const len = n.ids?.length;
    for (const k of ['tokens', 'logProbs', 'margins', 'entropy', 'top'] as const) {
      if (!Array.isArray(n[k]) || n[k].length !== len) throw new Error(`node ${n.id}: ${k} has ${Array.isArray(n[k]) ? n[k].length : 'no'} entries for ${len} tokens`);
    }
    if (n.parent !== null) {
      const p = seen.get(n.parent);
      if (!p) throw new Error(`node ${n.id}: its parent ${n.parent} is missing or listed after it`);
      if (!(n.start >= 1 && n.start <= p.start + p.ids.length)) throw new Error(`node ${n.id}: forks at position ${n.start}, outside its parent's path`);
    }
    seen.set(n.id, n);
  }
  return t;
}

/** The prompt a tree was grown from (its text, chat template, system prompt, tools and enable_thinking), as the engine reads it. */
export function treePrompt(tree: BranchTree): PromptInput {
  return promptWith(tree.prompt, tree);
}
