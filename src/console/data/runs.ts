/**
 * The console's reads of runs, their quarantined records and unfinished windows: the sync
 * wing's stores own the SQL (src/sync/runs-store.ts, src/sync/sync-state.ts). Every query
 * names the organisations it reads (`orgs`: the page's scope): runs, quarantine and
 * unfinished windows are per organisation (0015).
 */
export { getRun, latestRuns, listRuns, resourcesWithRuns, runQuarantine, runSeries, runUnfinishedWindows, type AttemptRow, type QuarantinedRow, type RunFilter, type RunPoint, type RunRow } from '../../sync/index.ts';
