/**
 * How far a job of many runs has come: `done` of `total` steps (forward passes, prompts,
 * continuations — each study's docstring says which), reported after each step. The one progress
 * shape of every study, the worker protocol and the UI's step counter; a study that reports more
 * extends it (studies/branching/forks.ts ForkProgress, studies/report.ts ReportProgress).
 */
export interface Progress {
  done: number;
  total: number;
}
