import type { JobContext } from '../../queue/job-context.ts';
import { classify } from '../../lib/errors.ts';
import { isNotOffered } from '../../platform/errors.ts';
import { beginAttempt, finishAction, recordRetryableError } from './actions-store.ts';
import { findIdentity } from './identities-store.ts';
import { PROVISION_ATTEMPTS } from './actions.ts';
import type { OrgTx } from '../../warehouse/scope.ts';

/** What a provisioning job returns (BullMQ keeps it in Redis): never a secret. */
export interface ActionOutcome {
  actionId: string;
  status: 'succeeded' | 'needs-identity' | 'already-done';
  platformUserId?: string | null;
  /** create-user found the account already there (EMAIL_IN_USE_ORG_CONNECTED) and took it over. */
  adopted?: boolean;
}

/**
 * The frame of every provisioning job: counts the attempt in the audit row, runs the
 * action, and records a failure. A documented 400 code (or a secret that cannot be
 * read) fails the action at once with its code kept; anything else is retried by
 * BullMQ with backoff, and recorded as failed only when the last attempt fails.
 * `perform` records success itself, in one transaction with the identity it changes.
 */
export async function runAction(ctx: JobContext, actionId: string, perform: () => Promise<ActionOutcome>): Promise<ActionOutcome> {
  const org = ctx.org.slug;
  const before = await beginAttempt(ctx.scope, actionId);
  if (before === 'succeeded') {
    // A second job for an action already carried out (e.g. re-enqueued by hand): nothing to do.
    ctx.log.info({ actionId }, 'action already succeeded; nothing to do');
    return { actionId, status: 'already-done' };
  }
  try {
    return await perform();
  } catch (error) {
    const facts = classify(error);
    const last = ctx.job.attemptsMade + 1 >= PROVISION_ATTEMPTS;
    if (!facts.retryable || last) {
      await finishAction(ctx.scope, actionId, { status: 'failed', errorCode: facts.code, errorMessage: facts.message });
      ctx.log.warn({ actionId, code: facts.code, permanent: !facts.retryable }, 'provisioning action failed');
      throw error;
    }
    await recordRetryableError(ctx.scope, actionId, facts.code, facts.message);
    throw error;
  }
}

export interface ResolvedUser {
  platformUserId: string;
  source: 'identity' | 'feed' | 'lookup';
}

/**
 * The platform user id an action needs: trainsync.identities first (a create earlier
 * in the chain stored it there), then the feed's platform_user_id, then GET users by
 * e-mail. Undefined when nobody knows it (the action then waits as needs-identity).
 */
export async function resolveUserId(ctx: JobContext, employeeId: string, email: string, fromFeed: string | null): Promise<ResolvedUser | undefined> {
  const identity = await findIdentity(ctx.scope, employeeId);
  if (identity?.platform_user_id) return { platformUserId: identity.platform_user_id, source: 'identity' };
  if (fromFeed) return { platformUserId: fromFeed, source: 'feed' };
  try {
    const user = await ctx.platform.findUserByEmail(email);
    return user ? { platformUserId: user.id, source: 'lookup' } : undefined;
  } catch (error) {
    if (isNotOffered(error)) return undefined;
    throw error;
  }
}

/** Records a needs-identity end: visible in `status`, replanned (same id) by the next run. */
export async function needsIdentity(ctx: JobContext, actionId: string, employeeId: string, email: string): Promise<ActionOutcome> {
  await finishAction(ctx.scope, actionId, {
    status: 'needs-identity',
    errorCode: 'NEEDS_IDENTITY',
    errorMessage:
      `no platform user id is known for ${employeeId} (${email}): not in trainsync.identities, not in the feed's platform_user_id, ` +
      'and GET users?email= found no account. Put the GUID in the feed\'s platform_user_id column (or create the account), then rerun provision.',
  });
  ctx.log.warn({ actionId, employeeId }, 'provisioning action needs an identity');
  return { actionId, status: 'needs-identity' };
}

/** The ids every action on an existing user carries. */
export interface UserActionPayload {
  actionId: string;
  employeeId: string;
  email: string;
  platformUserId: string | null;
}

/**
 * An action on an existing user: find its platform id (or wait as needs-identity),
 * make the platform call, then record the applied state and the audit row together.
 */
export function runUserAction(
  ctx: JobContext,
  p: UserActionPayload,
  call: (platformUserId: string) => Promise<void>,
  record: (tx: OrgTx, platformUserId: string) => Promise<unknown>,
): Promise<ActionOutcome> {
  return runAction(ctx, p.actionId, async () => {
    const user = await resolveUserId(ctx, p.employeeId, p.email, p.platformUserId);
    if (!user) return needsIdentity(ctx, p.actionId, p.employeeId, p.email);
    await call(user.platformUserId);
    await ctx.scope.transaction(async (tx) => {
      await record(tx, user.platformUserId);
      await finishAction(tx, p.actionId, { status: 'succeeded', after: { platformUserId: user.platformUserId } });
    });
    return { actionId: p.actionId, status: 'succeeded', platformUserId: user.platformUserId };
  });
}
