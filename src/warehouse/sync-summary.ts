/** What every sync job returns; the CLI prints it and metrics count it. */
export interface SyncSummary {
  resource: string;
  runId: number;
  mode: string;
  pages: number;
  inserted: number;
  updated: number;
  unchanged: number;
  quarantined: number;
  removed: number;
  durationMs: number;
  /** e.g. "not applicable (NO_UNLIMITED_PLAN)" or "not available". */
  note?: string;
  windows?: number;
  windowsResumed?: number;
}

export function emptyCounts(): Pick<SyncSummary, 'pages' | 'inserted' | 'updated' | 'unchanged' | 'quarantined' | 'removed'> {
  return { pages: 0, inserted: 0, updated: 0, unchanged: 0, quarantined: 0, removed: 0 };
}
