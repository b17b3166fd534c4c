import { randomUUID } from 'node:crypto';
import type { App } from '../app.ts';
import { requireSecretKey } from '../config.ts';
import { PROVISION_QUEUE } from '../queue/names.ts';
import type { JobRegistry } from '../queue/registry.ts';
import { defaultJobOptions } from '../queue/job-options.ts';
import { jobIdForAction, PROVISION_ATTEMPTS, PROVISION_JOB_NAMES, setPasswordPayloadSchema } from './action-payloads.ts';
import { recordQueuedActions, type AuditRow } from './audit.ts';
import { waitForActions } from './apply-plan.ts';
import { findIdentityByEmail } from './identities.ts';
import { encryptSecret } from './secrets.ts';

/**
 * Queues a password change and waits for it (the `sync` worker rule). The password is
 * encrypted before it leaves this function, bound to the e-mail, so the queued job, its
 * audit row and every log line hold no plain text. Each request is its own action
 * (`set-password:<email>:<uuid>`): asking twice means changing twice.
 */
export async function requestPasswordChange(app: App, registry: JobRegistry, email: string, password: string): Promise<AuditRow> {
  const key = requireSecretKey(app.config);
  const subject = email.trim().toLowerCase();
  const actionId = `set-password:${subject}:${randomUUID()}`;
  const identity = await findIdentityByEmail(app.db, subject);
  await recordQueuedActions(app.db, [
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
  await app.queues[PROVISION_QUEUE].add(PROVISION_JOB_NAMES.setPassword, data, {
    ...defaultJobOptions(app.config, PROVISION_ATTEMPTS),
    backoff: { type: 'exponential', delay: Math.min(5_000, app.config.TRAINSYNC_RETRY_MAX_DELAY_MS) },
    jobId: jobIdForAction(actionId),
  });
  const [row] = await waitForActions(app, registry, [actionId]);
  if (!row) throw new Error(`the audit row of ${actionId} is missing`);
  return row;
}
