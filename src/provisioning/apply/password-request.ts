import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.ts';
import { requireSecretKey } from '../../config.ts';
import { jobIdForAction, PROVISION_JOBS, setPasswordPayloadSchema } from './actions.ts';
import { recordQueuedActions, type AuditRow } from './audit.ts';
import { waitForActions, type ApplyDeps } from './enqueue.ts';
import { findIdentityByEmail } from './identities.ts';
import { encryptSecret } from './secrets.ts';

/**
 * Queues a password change and waits for it (the `sync` worker rule). The password is
 * encrypted before it leaves this function, bound to the e-mail, so the queued job, its
 * audit row and every log line hold no plain text. Each request is its own action
 * (`set-password:<email>:<uuid>`): asking twice means changing twice.
 */
export async function requestPasswordChange(deps: ApplyDeps & { config: Config }, email: string, password: string): Promise<AuditRow> {
  const key = requireSecretKey(deps.config);
  const subject = email.trim().toLowerCase();
  const actionId = `set-password:${subject}:${randomUUID()}`;
  const identity = await findIdentityByEmail(deps.db, subject);
  await recordQueuedActions(deps.db, [
    {
      actionId,
      employeeId: identity?.employee_id ?? subject,
      email: subject,
      kind: 'set-password',
      seq: 0,
      before: null,
      after: { passwordSet: true },
      feedHash: null,
    },
  ]);
  const data = setPasswordPayloadSchema.parse({ actionId, email: subject, secret: encryptSecret(key, password, subject) });
  await deps.queue.add(PROVISION_JOBS.setPassword, data, { org: deps.org, jobId: jobIdForAction(actionId), waited: true });
  const [row] = await waitForActions(deps, [actionId]);
  if (!row) throw new Error(`the audit row of ${actionId} is missing`);
  return row;
}
