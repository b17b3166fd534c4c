import { requireSecretKey } from '../src/config.ts';
import { PROVISION_ATTEMPTS, PROVISION_JOBS, setPasswordPayloadSchema } from '../src/provisioning/apply/actions.ts';
import { finishAction } from '../src/provisioning/apply/actions-store.ts';
import { runAction } from '../src/provisioning/apply/run-action.ts';
import { decryptSecret } from '../src/provisioning/apply/secrets.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';

/**
 * Sets a password. The payload holds it encrypted (AES-256-GCM, bound to the e-mail);
 * it is decrypted only here, sent only in the request body, and appears in no log,
 * audit row, return value or error message.
 */
export const setPassword = defineJob({
  name: PROVISION_JOBS.setPassword,
  enqueuedByName: true,
  queue: PROVISION_QUEUE,
  payload: setPasswordPayloadSchema,
  attempts: PROVISION_ATTEMPTS,
  run: (p, ctx) =>
    runAction(ctx, p.actionId, async () => {
      const password = decryptSecret(requireSecretKey(ctx.config), p.secret, p.email);
      await ctx.platform.setPassword(p.email, password);
      await finishAction(ctx.db, ctx.org.slug, p.actionId, { status: 'succeeded' });
      return { actionId: p.actionId, status: 'succeeded' };
    }),
});
