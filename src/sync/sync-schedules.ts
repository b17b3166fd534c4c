import type { Config } from '../config.ts';
import type { JobCatalog } from '../queue/catalog.ts';
import { longestGapSeconds } from '../queue/schedule-interval.ts';
import { scheduleTable } from '../queue/schedulers.ts';
import type { OrgScopes } from '../warehouse/scope.ts';
import { syncJobs } from './catalog-resources.ts';
import { replaceSyncSchedules, type SyncScheduleRow } from './schedules-store.ts';

/** Each organisation's schedule of each synced resource whose schedule is on, with its longest gap. */
export function syncScheduleRows(catalog: JobCatalog, config: Pick<Config, 'orgs' | 'scheduleSpreadMinutes'>): SyncScheduleRow[] {
  const resourceOf = new Map(syncJobs(catalog.values()).map((job) => [job.name, job.resource!]));
  return scheduleTable(catalog, config).flatMap((scheduled) => {
    const resource = resourceOf.get(scheduled.job);
    // The gap from the line as written: the spread moves every fire alike, and the written lines are few.
    return resource === undefined ? [] : [{ org: scheduled.org, resource, pattern: scheduled.pattern, everySeconds: longestGapSeconds(scheduled.written) }];
  });
}

/**
 * Records the schedules this worker registers in trainsync.sync_schedules (the freshness view
 * and the "data stale" alert read them). Called where the schedules are registered.
 */
export async function recordSyncSchedules(scopes: OrgScopes, catalog: JobCatalog, config: Pick<Config, 'orgs' | 'scheduleSpreadMinutes'>): Promise<void> {
  const rows = syncScheduleRows(catalog, config);
  await scopes.acrossOrganisations('record the sync schedules (freshness)', (all) => replaceSyncSchedules(all.db, rows));
}
