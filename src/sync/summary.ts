import { z } from 'zod';

const count = z.number().int().min(0);

/**
 * What every sync job returns, described once: the job declares it (defineSyncJob),
 * the job's log line and the CLI table read it through it, metrics count its rows.
 */
export const syncSummarySchema = z.object({
  resource: z.string(),
  runId: z.number(),
  /** `incomplete` when the run could not read everything it meant to (see `note`). */
  status: z.enum(['succeeded', 'incomplete']),
  mode: z.string(),
  pages: count,
  inserted: count,
  updated: count,
  unchanged: count,
  quarantined: count,
  removed: count,
  /** Requests the run made to the platform (every HTTP attempt). */
  requests: count.optional(),
  durationMs: z.number(),
  /** e.g. "not applicable (NO_UNLIMITED_PLAN)" or "not available". */
  note: z.string().optional(),
  windows: count.optional(),
  windowsResumed: count.optional(),
});

export type SyncSummary = z.output<typeof syncSummarySchema>;

