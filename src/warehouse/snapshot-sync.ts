import type pg from 'pg';
import type { JobContext } from '../context.ts';
import type { Page, RecordProblem } from '../platform/types.ts';
import { emptyCounts, type SyncSummary } from './sync-summary.ts';
import { finishRun, quarantineRecords, startRun } from './sync-state.ts';
import { withTransaction } from './transaction.ts';

export interface LoadCounts {
  inserted: number;
  updated: number;
  unchanged: number;
}

export interface SnapshotSpec<T> {
  resource: string;
  jobId: string;
  pages(signal: AbortSignal): AsyncIterable<Page<T>>;
  upsert(client: pg.PoolClient, records: T[], seenAt: Date): Promise<LoadCounts>;
  /** Marks rows not seen at `seenAt` as removed; returns how many. */
  markMissing(client: pg.PoolClient, seenAt: Date): Promise<number>;
}

/**
 * A full snapshot of a small resource in one transaction: every page upserted in
 * batches, then rows the platform no longer lists marked removed. If any record was
 * quarantined, nothing is marked removed that run: a record we could not read is not
 * a record that is gone.
 */
export async function syncSnapshot<T>(ctx: JobContext, spec: SnapshotSpec<T>): Promise<SyncSummary> {
  const started = Date.now();
  const runId = await withTransaction(ctx.pool, (client) => startRun(client, { resource: spec.resource, mode: 'snapshot', params: {}, jobId: spec.jobId }));
  const counts = emptyCounts();
  try {
    let note: string | undefined;
    await withTransaction(ctx.pool, async (client) => {
      const seenAt = new Date();
      let batch: T[] = [];
      const problems: RecordProblem[] = [];
      const flush = async (): Promise<void> => {
        if (batch.length === 0) return;
        const loaded = await spec.upsert(client, batch, seenAt);
        counts.inserted += loaded.inserted;
        counts.updated += loaded.updated;
        counts.unchanged += loaded.unchanged;
        batch = [];
      };
      for await (const page of spec.pages(ctx.signal)) {
        counts.pages += 1;
        batch.push(...page.records);
        problems.push(...page.problems);
        if (batch.length >= ctx.config.TRAINSYNC_BATCH_ROWS) await flush();
        ctx.progress({ resource: spec.resource, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged + batch.length });
      }
      await flush();
      if (problems.length > 0) {
        counts.quarantined = await quarantineRecords(client, runId, problems);
        note = `${problems.length} record(s) quarantined: removals not marked this run`;
      } else {
        counts.removed = await spec.markMissing(client, seenAt);
      }
      await finishRun(client, runId, { status: 'succeeded', ...counts, note });
    });
    return { resource: spec.resource, runId, mode: 'snapshot', ...counts, durationMs: Date.now() - started, ...(note ? { note } : {}) };
  } catch (error) {
    await finishRun(ctx.pool, runId, { status: 'failed', ...counts, error: error instanceof Error ? error.message : String(error) }).catch(() => undefined);
    throw error;
  }
}

/** Records a run that had nothing to load (e.g. "not applicable") as succeeded with a note. */
export async function recordNoteRun(ctx: JobContext, resource: string, jobId: string, note: string): Promise<SyncSummary> {
  const runId = await withTransaction(ctx.pool, async (client) => {
    const id = await startRun(client, { resource, mode: 'snapshot', params: {}, jobId });
    await finishRun(client, id, { status: 'succeeded', ...emptyCounts(), note });
    return id;
  });
  return { resource, runId, mode: 'snapshot', ...emptyCounts(), durationMs: 0, note };
}
