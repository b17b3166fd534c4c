import { requireSecretKey } from '../src/config.ts';
import { PROVISION_ATTEMPTS, PROVISION_JOBS, setPasswordPayloadSchema } from '../src/provisioning/apply/actions.ts';
import { finishAction } from '../src/provisioning/apply/actions-store.ts';
import { runAction } from '../src/provisioning/apply/run-action.ts';
import { decryptSecret } from '../src/provisioning/apply/secrets.ts';
import { forgettingPasswordSecret, passwordSecretOf } from '../src/provisioning/apply/password-secret.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';

/**
 * Sets a password. The payload names the action; the password is kept encrypted
 * (AES-256-GCM, bound to the e-mail) in Redis under the action's key, deleted once used
 * or failed for good. It is decrypted only here, sent only in the request body, and
 * appears in no job data, log, audit row, return value or error message.
 */
export const setPassword = defineJob({
  name: PROVISION_JOBS.setPassword,
  enqueuedByName: true,
  queue: PROVISION_QUEUE,
  payload: setPasswordPayloadSchema,
  attempts: PROVISION_ATTEMPTS,
  run: (p, ctx) =>
    forgettingPasswordSecret(ctx, p.actionId, () =>
      runAction(ctx, p.actionId, async () => {
        const token = p.secret ?? (await passwordSecretOf(ctx.actions.secrets, ctx.scope, p.actionId));
        const password = decryptSecret(requireSecretKey(ctx.config), token, p.email);
        await ctx.platform.setPassword(p.email, password);
        await finishAction(ctx.scope, p.actionId, { status: 'succeeded' });
        return { actionId: p.actionId, status: 'succeeded' };
      }),
    ),
});
