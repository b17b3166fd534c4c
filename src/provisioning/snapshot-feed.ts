import { TrainsyncError } from '../lib/errors.ts';
import { snapshotEmployees, type EmployeeSnapshotCounts } from './employees-store.ts';
import type { FeedReadResult } from './feed/types.ts';
import type { PlanMode } from './plan/types.ts';
import type { OrgScope } from '../warehouse/scope.ts';

/** A feed whose file could not be read is not a list of employees: snapshotting it is refused. */
export class UnreadableFeedError extends TrainsyncError {
  constructor(readonly fileErrors: readonly string[]) {
    super(`the feed could not be read, so no employee was changed: ${fileErrors.join('; ')}`, { code: 'FEED_UNREADABLE', retryable: false });
    this.name = 'UnreadableFeedError';
  }
}

export interface SnapshotFeedOptions {
  mode: PlanMode;
  /** Fixed instant (tests); default the database clock. */
  at?: Date;
}

/**
 * Snapshots a read feed of one organisation into training.employees / employee_history: its valid rows,
 * with the keys of its rejected rows protected from removal by a full feed.
 */
export async function snapshotFeed(scope: OrgScope, feed: FeedReadResult, options: SnapshotFeedOptions): Promise<EmployeeSnapshotCounts> {
  if (feed.fileErrors.length > 0) throw new UnreadableFeedError(feed.fileErrors);
  return snapshotEmployees(scope, {
    rows: feed.rows,
    mode: options.mode,
    keepEmployeeIds: feed.invalidEmployeeIds,
    keepEmails: feed.invalidEmails,
    ...(options.at ? { at: options.at } : {}),
  });
}

/** One line for a person: `employees: 3 joined, 1 changed, 0 returned, 2 removed, 120 unchanged`. */
export function formatSnapshotCounts(counts: EmployeeSnapshotCounts): string {
  return `employees: ${counts.listed} listed: ${counts.joined} joined, ${counts.changed} changed, ${counts.returned} returned, ${counts.removed} removed, ${counts.unchanged} unchanged`;
}
