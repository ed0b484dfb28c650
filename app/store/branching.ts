import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { mergeSetter } from './merge_setter';
import type { BranchTree, DrawSettings, ForkPointsResult, LensMargins } from '../../workers/protocol';
import type { DecodeRate } from '../lib/fork_estimate';

/** What colours the nodes of the tree view. */
export type NodeColour = 'final_margin' | 'mean_margin' | 'mean_entropy';

/** The position picked to fork from: a node's path and an absolute position on it. */
export interface ForkSite { node: number; position: number }

/** The branch explorer slice: the tree, what is selected, the fork-point scores. */
export interface BranchingSlice {
  tree: BranchTree | null;
  /** Node whose path is shown in the token row. */
  branchNode: number;
  forkSite: ForkSite | null;
  /** Lens margins of the alternatives at the fork site (fetched when it is picked). */
  forkLens: LensMargins | null;
  /** Up to two nodes whose texts and margin curves are compared. */
  compare: number[];
  nodeColour: NodeColour;
  /** Continuations of a fork: greedy or sampled, with or without the active interventions. */
  forkDraw: DrawSettings;
  /** Positions with p(top-1) − p(top-2) at most this are marked as fork points. */
  gapThreshold: number;
  forkSamples: number;
  /** Find fork points scores only the near ties (gap ≤ gapThreshold) rather than every new token. */
  forkNearTiesOnly: boolean;
  /** This load's decode speed, measured on the last trunk, fork or fork-points run (lib/fork_estimate.ts). */
  decodeRate: DecodeRate | null;
  forks: ForkPointsResult | null;
  /** A tree cleared by a model load (the worker drops it with its model): the load it was of and the one now, until a new tree. */
  droppedTree: { was: string; now: string } | null;
  setTree(tree: BranchTree | null, select?: number): void;
  setBranchNode(id: number): void;
  setForkSite(site: ForkSite | null): void;
  setForkLens(lens: LensMargins | null): void;
  toggleCompare(id: number): void;
  setNodeColour(c: NodeColour): void;
  setForkDraw(patch: Partial<DrawSettings>): void;
  setGapThreshold(v: number): void;
  setForkSamples(n: number): void;
  setForkNearTiesOnly(on: boolean): void;
  setDecodeRate(rate: DecodeRate | null): void;
  setForks(r: ForkPointsResult | null): void;
  /** Clears the tree after a load replaced the model it was grown with (`was`, `now`: modelIdentity strings). */
  dropTree(was: string, now: string): void;
}

export const createBranchingSlice: StateCreator<AppState, [], [], BranchingSlice> = (set) => ({
  tree: null,
  branchNode: 0,
  forkSite: null,
  forkLens: null,
  compare: [],
  nodeColour: 'final_margin',
  forkDraw: { temperature: 0, topK: 0, seed: 0, steered: false },
  gapThreshold: 0.2,
  forkSamples: 4,
  forkNearTiesOnly: true,
  decodeRate: null,
  forks: null,
  droppedTree: null,
  setTree: (tree, select) => set((s) => ({
    tree, droppedTree: null,
    branchNode: select ?? (tree && tree.nodes.some((n) => n.id === s.branchNode) ? s.branchNode : 0),
    compare: select !== undefined && tree ? [...new Set([0, select])].slice(-2) : tree ? s.compare.filter((id) => tree.nodes.some((n) => n.id === id)) : [],
    forkSite: null, forkLens: null,
    forks: tree && s.tree && tree.promptIds.join() === s.tree.promptIds.join() && tree.nodes[0]?.ids.join() === s.tree.nodes[0]?.ids.join() ? s.forks : null,
  })),
  setBranchNode: (branchNode) => set({ branchNode, forkSite: null, forkLens: null }),
  setForkSite: (forkSite) => set({ forkSite, forkLens: null }),
  setForkLens: (forkLens) => set({ forkLens }),
  toggleCompare: (id) => set((s) => ({ compare: s.compare.includes(id) ? s.compare.filter((x) => x !== id) : [...s.compare, id].slice(-2) })),
  setNodeColour: (nodeColour) => set({ nodeColour }),
  setForkDraw: mergeSetter(set, 'forkDraw'),
  setGapThreshold: (gapThreshold) => set({ gapThreshold }),
  setForkSamples: (forkSamples) => set({ forkSamples }),
  setForkNearTiesOnly: (forkNearTiesOnly) => set({ forkNearTiesOnly }),
  setDecodeRate: (rate) => set((s) => ({ decodeRate: rate ?? s.decodeRate })),
  setForks: (forks) => set({ forks }),
  dropTree: (was, now) => set((s) => (s.tree ? { tree: null, droppedTree: { was, now }, branchNode: 0, compare: [], forkSite: null, forkLens: null, forks: null } : {})),
});
