import type { RunCounts } from './sync-state.ts';

/** What every sync job returns; the CLI prints it and metrics count it. */
export interface SyncSummary extends RunCounts {
  resource: string;
  runId: number;
  /** `incomplete` when the run could not read everything it meant to (see `note`). */
  status: 'succeeded' | 'incomplete';
  mode: string;
  durationMs: number;
  /** e.g. "not applicable (NO_UNLIMITED_PLAN)" or "not available". */
  note?: string;
  windows?: number;
  windowsResumed?: number;
}
