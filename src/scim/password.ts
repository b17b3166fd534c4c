import type { Config } from '../config.ts';
import { jobIdForAction, lastOpenAction, queuePasswordChange } from '../provisioning/index.ts';
import type { ChainSpec, JobQueue } from '../queue/job-queue.ts';
import { badRequest } from './errors.ts';
import type { ScimUserRow } from './store.ts';
import { accountEmail, type ScimUserResource } from './user-mapping.ts';
import type { OrgScope } from '../warehouse/scope.ts';

/**
 * A password an identity provider sends (Okta's "Sync password": on create, PUT or PATCH)
 * becomes a set-password job through the same encrypted path as `trainsync password`: the
 * secret is encrypted with TRAINSYNC_SECRET_KEY before it is written anywhere, and the
 * SCIM resource never holds it. The job runs after the employee's jobs still queued (the
 * create of a new User), so the account exists when the password is set.
 */

export interface ScimPasswordDeps {
  scope: OrgScope;
  queue: JobQueue;
  config: Config;
}

/** States of a job that has not finished: a new link can wait for it. */
const UNFINISHED = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/** The last job of the employee's chain still queued (its root: nothing waits for it yet), if any. */
async function openChainRoot(deps: ScimPasswordDeps, employeeId: string): Promise<ChainSpec | undefined> {
  const open = await lastOpenAction(deps.scope, employeeId);
  if (open === undefined) return undefined;
  const job = await deps.queue.find(jobIdForAction(deps.scope, open));
  if (!job || !UNFINISHED.has(String(job.state))) return undefined;
  return { org: deps.scope.org, name: job.name, data: job.data, jobId: job.id };
}

/** Refuses a password before anything is written when it could not be queued (no secret key). */
export function checkPasswordAccepted(config: Pick<Config, 'TRAINSYNC_SECRET_KEY'>): void {
  if (config.TRAINSYNC_SECRET_KEY === undefined) {
    throw badRequest(
      'password: trainsync cannot take passwords: TRAINSYNC_SECRET_KEY is not set (it encrypts them in the queue). ' +
        'Set it on the worker, or turn off password sync in the identity provider',
      'invalidValue',
    );
  }
}

/** Queues the User's password change; resolves once its audit row and job are durable. */
export async function queueScimPassword(deps: ScimPasswordDeps, row: ScimUserRow, password: string): Promise<void> {
  checkPasswordAccepted(deps.config);
  const after = await openChainRoot(deps, row.employee_id);
  await queuePasswordChange(deps, { employeeId: row.employee_id, email: accountEmail(row.resource as ScimUserResource), password, ...(after ? { after } : {}) });
}
