import type { AnyJobDefinition } from '../src/queue/define-job.ts';
import { changeGroup } from './change-group.ts';
import { createUser } from './create-user.ts';
import { loadWebhookResultJob } from './load-webhook-result.ts';
import { reconcileFixJob } from './reconcile-fix.ts';
import { setAccess } from './set-access.ts';
import { setPassword } from './set-password.ts';
import { syncJob } from '../src/sync/resource-job.ts';
import { courses } from '../src/sync/resources/courses.ts';
import { filters } from '../src/sync/resources/filters.ts';
import { groups } from '../src/sync/resources/groups.ts';
import { results } from '../src/sync/resources/results.ts';
import { seats } from '../src/sync/resources/seats.ts';
import { users } from '../src/sync/resources/users.ts';

/** Every job the worker knows; the registry refuses duplicates and nameless entries. */
export const allJobs: readonly AnyJobDefinition[] = [
  // Sync jobs, one per resource declaration (src/sync/resources/), in the order `sync all`
  // runs them: a list per parent after its parent.
  syncJob(courses),
  syncJob(filters),
  syncJob(groups),
  syncJob(users),
  syncJob(results),
  syncJob(seats),
  createUser,
  setPassword,
  changeGroup,
  setAccess,
  loadWebhookResultJob,
  reconcileFixJob,
];
