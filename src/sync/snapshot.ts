import type { JobContext } from '../queue/job-context.ts';
import { isNotOffered } from '../platform/errors.ts';
import type { Page, PlatformClient, RecordProblem } from '../platform/types.ts';
import type { LoadCounts } from '../warehouse/load-counts.ts';
import { currentKeys, markMissingListing, upsertListing, type Listed, type PathValues } from '../warehouse/load-listing.ts';
import type { SnapshotResource } from './resources/resource.ts';
import { quarantineRecords } from './sync-state.ts';
import { finishRun } from './runs-store.ts';
import type { OrgTx } from '../warehouse/scope.ts';
import { closeRun, withRun, type ActiveRun } from './run.ts';
import type { SyncSummary } from './summary.ts';

export interface SnapshotSpec<T> {
  resource: string;
  /** The pages, read through `platform` (the run's: its requests count toward the run). */
  pages(platform: PlatformClient, signal: AbortSignal): AsyncIterable<Page<T>>;
  /** Writes records under the transaction's organisation (the job's). */
  upsert(tx: OrgTx, records: T[], seenAt: Date): Promise<LoadCounts>;
  /** Marks the organisation's rows not seen at `seenAt` as removed; returns how many. */
  markMissing(tx: OrgTx, seenAt: Date): Promise<number>;
  /**
   * Set for an endpoint a platform may not offer (404/405/501): the run then succeeds
   * with the note this returns instead of failing, e.g. "not available".
   */
  whenNotOffered?: (status: number) => string;
}

/**
 * A full snapshot of a small resource in one transaction: every page upserted in
 * batches, then rows the platform no longer lists marked removed. If any record was
 * quarantined, nothing is marked removed that run: a record we could not read is not
 * a record that is gone.
 */
export function syncSnapshot<T>(jobCtx: JobContext, spec: SnapshotSpec<T>): Promise<SyncSummary> {
  // The run's context: its requests count toward the run (run.ts).
  return withRun(jobCtx, { resource: spec.resource, mode: 'snapshot' }, async (run, ctx) => {
    try {
      await loadSnapshot(ctx, spec, run);
    } catch (error) {
      if (spec.whenNotOffered === undefined || !isNotOffered(error)) throw error;
      ctx.log.info({ status: error.status }, `the platform does not offer ${spec.resource}; recorded as not available`);
      await finishRun(ctx.scope.db, run.id, { status: 'succeeded', note: spec.whenNotOffered(error.status ?? 0) });
    }
  });
}

async function loadSnapshot<T>(ctx: JobContext, spec: SnapshotSpec<T>, run: ActiveRun): Promise<void> {
  await ctx.scope.transaction(async (tx) => {
    const seenAt = new Date();
    const counts = { pages: 0, inserted: 0, updated: 0, unchanged: 0, quarantined: 0, removed: 0 };
    let batch: T[] = [];
    const problems: RecordProblem[] = [];
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const loaded = await spec.upsert(tx, batch, seenAt);
      counts.inserted += loaded.inserted;
      counts.updated += loaded.updated;
      counts.unchanged += loaded.unchanged;
      batch = [];
    };
    for await (const page of spec.pages(ctx.platform, ctx.signal)) {
      counts.pages += 1;
      batch.push(...page.records);
      problems.push(...page.problems);
      if (batch.length >= ctx.config.TRAINSYNC_BATCH_ROWS) await flush();
      ctx.progress({ resource: spec.resource, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged + batch.length });
    }
    await flush();
    let note: string | undefined;
    if (problems.length > 0) {
      counts.quarantined = await quarantineRecords(tx, run.id, problems);
      note = `${problems.length} record(s) quarantined: removals not marked this run`;
    } else {
      counts.removed = await spec.markMissing(tx, seenAt);
    }
    await closeRun(tx.db, run, { status: 'succeeded', ...counts, note });
  });
}

const NO_PATH: PathValues = Object.freeze({});

/**
 * The pages of a snapshot resource's listing, each record with the path values of its
 * request: one listing, or one per key of the parent's table (a list per parent).
 */
async function* listedPages<T>(ctx: JobContext, platform: PlatformClient, resource: SnapshotResource<T>, signal: AbortSignal): AsyncGenerator<Page<Listed<T>>> {
  const paths: PathValues[] = [];
  if (resource.each === undefined) paths.push(NO_PATH);
  else for (const key of await currentKeys(ctx.scope, resource.each.parent.table)) paths.push({ [resource.each.param]: key });
  for (const path of paths) {
    for await (const page of platform.list(resource.endpoint, { path }, { signal })) {
      yield { ...page, records: page.records.map((record) => ({ record, path })) };
    }
  }
}

/** A snapshot resource's run: its listing, its table's generic loader (load-listing.ts), this engine. */
export function syncSnapshotResource<T>(ctx: JobContext, resource: SnapshotResource<T>): Promise<SyncSummary> {
  return syncSnapshot<Listed<T>>(ctx, {
    resource: resource.name,
    pages: (platform, signal) => listedPages(ctx, platform, resource, signal),
    upsert: (tx, records, seenAt) => upsertListing(tx, resource.table, records, seenAt),
    markMissing: (tx, seenAt) => markMissingListing(tx, resource.table, seenAt),
    whenNotOffered: resource.whenNotOffered,
  });
}
