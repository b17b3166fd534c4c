import type { AnyJobDefinition } from '../src/queue/define-job.ts';
import { changeGroup } from './change-group.ts';
import { createUser } from './create-user.ts';
import { loadWebhookResultJob } from './load-webhook-result.ts';
import { reconcileFixJob } from './reconcile-fix.ts';
import { setAccess } from './set-access.ts';
import { setPassword } from './set-password.ts';
import { syncCourses } from './sync-courses.ts';
import { syncFilters } from './sync-filters.ts';
import { syncGroups } from './sync-groups.ts';
import { syncResults } from './sync-results.ts';
import { syncSeats } from './sync-seats.ts';
import { syncUsers } from './sync-users.ts';

/** Every job the worker knows; the registry refuses duplicates and nameless entries. */
export const allJobs: readonly AnyJobDefinition[] = [
  // Sync jobs in the order `sync all` runs them.
  syncCourses,
  syncFilters,
  syncGroups,
  syncUsers,
  syncResults,
  syncSeats,
  createUser,
  setPassword,
  changeGroup,
  setAccess,
  loadWebhookResultJob,
  reconcileFixJob,
];
