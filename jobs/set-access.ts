import { PROVISION_ATTEMPTS, PROVISION_JOBS, setAccessPayloadSchema } from '../src/provisioning/apply/actions.ts';
import { setIdentityActive } from '../src/provisioning/apply/identities-store.ts';
import { runUserAction } from '../src/provisioning/apply/run-action.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';

/**
 * Disables a leaver or enables a returner: POST users/{id}/disable or /enable, then the
 * identity's `active` and the audit row in one transaction. Both calls answer 204
 * whatever the current state, so a retry (or a crash before the record) repeats
 * nothing harmful.
 */
export const setAccess = defineJob({
  name: PROVISION_JOBS.setAccess,
  enqueuedByName: true,
  queue: PROVISION_QUEUE,
  payload: setAccessPayloadSchema,
  attempts: PROVISION_ATTEMPTS,
  run: (p, ctx) =>
    runUserAction(
      ctx,
      p,
      (userId) => (p.active ? ctx.platform.enableUser(userId) : ctx.platform.disableUser(userId)),
      (tx, userId) => setIdentityActive(tx, p.employeeId, p.active, userId),
    ),
});
