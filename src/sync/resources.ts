import { JOB_NAMES, type JobName } from '../queue/names.ts';

/** What `sync` can copy, in the order `sync all` runs them. */
export const SYNC_RESOURCES = ['courses', 'filters', 'groups', 'users', 'results', 'seats'] as const;
export type SyncResource = (typeof SYNC_RESOURCES)[number];

const JOB_OF: Readonly<Record<SyncResource, JobName>> = {
  courses: JOB_NAMES.syncCourses,
  filters: JOB_NAMES.syncFilters,
  groups: JOB_NAMES.syncGroups,
  users: JOB_NAMES.syncUsers,
  results: JOB_NAMES.syncResults,
  seats: JOB_NAMES.syncSeats,
};

/** The job that syncs a resource. */
export function syncJobName(resource: SyncResource): JobName {
  return JOB_OF[resource];
}
