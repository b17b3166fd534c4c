import type { JobContext } from '../../queue/job-context.ts';
import type { SecretStore } from '../../queue/secret-store.ts';
import { classify } from '../../lib/errors.ts';
import { PROVISION_ATTEMPTS } from './actions.ts';
import { SecretError } from './secrets.ts';
import type { OrgRef } from '../../warehouse/scope.ts';

/**
 * Where a queued password change keeps its password: encrypted (AES-256-GCM, bound to the
 * e-mail, src/provisioning/apply/secrets.ts) in Redis under a key of its own named after
 * the action, never in the job's data. Job data is what bull-board shows every console
 * viewer and what BullMQ keeps after the job (for days); the key is read only by the job,
 * deleted once the change is made or has failed for good, and expires on its own.
 */

/** How long a queued password is kept when its job never runs (a worker down for days, a chain that waits). */
export const PASSWORD_SECRET_TTL_SECONDS = 7 * 24 * 60 * 60;

/** Keeps the encrypted password of `actionId` for its job; call before the job is queued. */
export async function keepPasswordSecret(secrets: SecretStore, scope: OrgRef, actionId: string, encrypted: string): Promise<void> {
  await secrets.put(scope, actionId, encrypted, PASSWORD_SECRET_TTL_SECONDS);
}

/** The encrypted password of `actionId`; a permanent error when it is gone (used, or older than the TTL). */
export async function passwordSecretOf(secrets: SecretStore, scope: OrgRef, actionId: string): Promise<string> {
  const token = await secrets.get(scope, actionId);
  if (token === undefined) {
    throw new SecretError(
      `the password of ${actionId} is no longer kept (it is deleted once used, and after ${PASSWORD_SECRET_TTL_SECONDS / 86_400} days): ask for the change again (trainsync password, or the identity provider)`,
    );
  }
  return token;
}

/**
 * Runs a password job and then forgets its secret: after success (also when an earlier
 * attempt had already succeeded and crashed before forgetting it), and after a failure
 * that will not be retried. A failure that will be retried keeps it: the retry of a job
 * that crashed still finds its password.
 */
export async function forgettingPasswordSecret<T>(ctx: Pick<JobContext, 'actions' | 'scope' | 'job' | 'log'>, actionId: string, run: () => Promise<T>): Promise<T> {
  const forget = (): Promise<void> =>
    ctx.actions.secrets.drop(ctx.scope, actionId).catch((error: unknown) => ctx.log.warn({ err: error, actionId }, 'could not delete a used password from Redis; it expires on its own'));
  let outcome: T;
  try {
    outcome = await run();
  } catch (error) {
    if (!classify(error).retryable || ctx.job.attemptsMade + 1 >= PROVISION_ATTEMPTS) await forget();
    throw error;
  }
  await forget();
  return outcome;
}
