import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { ActionQueue, ChainSpec } from '../../queue/action-queue.ts';
import { requireSecretKey } from '../../config.ts';
import { jobIdForAction, PROVISION_JOBS, setPasswordPayloadSchema } from './actions.ts';
import { recordQueuedActions, type AuditRow } from './actions-store.ts';
import { waitForActions, type ApplyDeps } from './enqueue.ts';
import { findIdentityByEmail } from './identities-store.ts';
import { encryptSecret } from './secrets.ts';
import { keepPasswordSecret } from './password-secret.ts';

/** What queueing a password change needs: the audit table, the queue, the secret key. */
export interface PasswordDeps {
  scope: ApplyDeps['scope'];
  queue: ActionQueue;
  config: Config;
}

export interface PasswordChange {
  email: string;
  password: string;
  /** The employee the audit row is filed under (default: the identity with this e-mail, else the e-mail). */
  employeeId?: string;
  /** A job that must finish first (SCIM: the employee's create still queued); the change runs after it. */
  after?: ChainSpec;
}

/**
 * Records and queues a password change without waiting for it (the SCIM path: answered once
 * durable). The password is encrypted before it leaves this function, bound to the e-mail, and
 * kept in Redis under the action's own key (with a TTL) before the job is queued: the job's
 * data (shown by bull-board) holds only the action id and e-mail; its audit row and every
 * log line hold no password either. Each request is its own
 * action (`set-password:<email>:<uuid>`): asking twice means changing twice. Returns the action id.
 */
export async function queuePasswordChange(deps: PasswordDeps, change: PasswordChange): Promise<string> {
  const key = requireSecretKey(deps.config);
  const subject = change.email.trim().toLowerCase();
  const actionId = `set-password:${subject}:${randomUUID()}`;
  const employeeId = change.employeeId ?? (await findIdentityByEmail(deps.scope, subject))?.employee_id ?? subject;
  await recordQueuedActions(deps.scope, [
    { actionId, employeeId, email: subject, kind: 'set-password', seq: 0, before: null, after: { passwordSet: true }, feedHash: null },
  ]);
  await keepPasswordSecret(deps.queue.secrets, deps.scope, actionId, encryptSecret(key, change.password, subject));
  const data = setPasswordPayloadSchema.parse({ actionId, email: subject });
  const jobId = jobIdForAction(deps.scope, actionId);
  if (change.after) await deps.queue.addChains([{ org: deps.scope.org, name: PROVISION_JOBS.setPassword, data, jobId, after: change.after }]);
  else await deps.queue.add(PROVISION_JOBS.setPassword, data, { org: deps.scope.org, jobId, waited: true });
  return actionId;
}

/**
 * Queues a password change and waits for it (the `sync` worker rule): `trainsync password`.
 * The same encrypted path as `queuePasswordChange`.
 */
export async function requestPasswordChange(deps: ApplyDeps & { config: Config }, email: string, password: string): Promise<AuditRow> {
  const actionId = await queuePasswordChange(deps, { email, password });
  const [row] = await waitForActions(deps, [actionId]);
  if (!row) throw new Error(`the audit row of ${actionId} is missing`);
  return row;
}
