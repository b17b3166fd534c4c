import type { RunCounts } from './sync-state.ts';

/** What every sync job returns; the CLI prints it and metrics count it. */
export interface SyncSummary extends Required<RunCounts> {
  resource: string;
  runId: number;
  mode: string;
  durationMs: number;
  /** e.g. "not applicable (NO_UNLIMITED_PLAN)" or "not available". */
  note?: string;
  windows?: number;
  windowsResumed?: number;
}

export function emptyCounts(): Required<RunCounts> {
  return { pages: 0, inserted: 0, updated: 0, unchanged: 0, quarantined: 0, removed: 0 };
}
