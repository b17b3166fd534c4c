/**
 * The sync wing's entry: what the other wings (webhooks, provisioning, the console) may use
 * of it. Another wing imports the sync wing through this file only (.dependency-cruiser.mjs,
 * docs/architecture.md "The rules"); the commands and jobs/ may reach further in.
 */

/** Runs (trainsync.runs): the last clean users sync a plan's platform view is dated by, the console's run pages. */
export { getRun, latestCleanRunStart, latestRuns, listRuns, resourcesWithRuns, runSeries, type AttemptRow, type RunFilter, type RunPoint, type RunRow } from './runs-store.ts';
/** Quarantined records and unfinished windows (the sync state). */
export { quarantineRecords, runQuarantine, runUnfinishedWindows, type QuarantinedRecord, type QuarantinedRow } from './sync-state.ts';
/** Cancelling a queued or orphaned sync. */
export { cancelQueuedOrOrphaned, cancellableSyncs } from './cancel-sync.ts';
/** The results declaration: a webhook's completion loads one result through it. */
export { results } from './resources/results.ts';
