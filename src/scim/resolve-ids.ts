import { sql } from 'kysely';
import type { Logger } from '../runtime/log.ts';
import { isNotOffered } from '../platform/errors.ts';
import type { PlatformClient } from '../platform/types.ts';
import { countIdentities, countOpenCreates, employeesWithoutAccountSql, identitiesOf, learnPlatformUserId, markCreatesResolved, unresolvedCreates } from '../provisioning/index.ts';
import type { OrgDb } from '../warehouse/scope.ts';

/**
 * Platform ids of accounts SCIM created without a lookup (`lookUp: 'later'`): POST users
 * returns no id, and a lookup per create would double a burst's requests. Once the burst's
 * creates have run, one pass learns the ids: by paging GET users (50 a page) when that
 * takes fewer requests than one GET users?email= per account, else one by one. Each
 * create is tried once (its audit row's after gets `resolved`); one not found is left to
 * its next action, which looks it up itself.
 */

const PAGE_SIZE = 50;
/** A pass waits for queued creates to finish (a burst at the budget: 1,000 in ~100 s), but not longer than this. */
const MAX_WAIT_MS = 300_000;

export interface ResolveDeps {
  /** One organisation's creates, resolved with its own client (its accounts, its key). */
  scope: OrgDb;
  platform: PlatformClient;
  log: Logger;
}

export type ResolveOutcome = { ran: false; reason: 'none' | 'creates-queued' } | { ran: true; tried: number; found: number; requests: 'paged' | 'one-by-one'; createsQueued: boolean };

export async function resolveDeferredIds(deps: ResolveDeps): Promise<ResolveOutcome> {
  const { scope, platform } = deps;
  const { db, org } = scope;
  // The open creates first: a create goes from queued to succeeded in one statement, so one that
  // is not open now is succeeded (or ended) when the read below runs. Read the other way round, a
  // create finishing between the two reads was in neither: "none" was answered, the pass marked
  // done, and the ids waited for the minute's pass (seen as a 60 s stall under load).
  const open = await countOpenCreates(scope);
  // Unresolved creates whose identity still has no platform id, with the identity's e-mail.
  const creates = await unresolvedCreates(scope, employeesWithoutAccountSql(scope));
  const identities = new Map((await identitiesOf(scope, creates.map((c) => c.employee_id))).map((i) => [i.employee_id, i]));
  const waiting = creates.flatMap((c) => {
    const identity = identities.get(c.employee_id);
    return identity !== undefined && identity.platform_user_id === null ? [{ ...c, email: identity.email }] : [];
  });
  if (waiting.length === 0) return { ran: false, reason: open > 0 ? 'creates-queued' : 'none' };
  const oldest = Math.min(...waiting.map((w) => w.updated_at.getTime()));
  if (open > 0 && Date.now() - oldest < MAX_WAIT_MS) return { ran: false, reason: 'creates-queued' };

  const { accounts } = await countIdentities(scope);
  const { listed } = await db.selectFrom('training.users').select(sql<number>`count(*)::int`.as('listed')).where(sql<string>`org`, '=', org).where('removed_at', 'is', null).executeTakeFirstOrThrow();
  const pages = Math.ceil(Math.max(accounts, listed) / PAGE_SIZE) + 1;
  const byEmail = new Map(waiting.map((w) => [w.email.toLowerCase(), w.employee_id]));
  const found = new Map<string, string>();
  const paged = waiting.length >= pages;
  try {
    if (paged) {
      for await (const page of platform.listUsers({})) {
        for (const user of page.records) {
          const employeeId = byEmail.get(user.email.toLowerCase());
          if (employeeId !== undefined) found.set(employeeId, user.id);
        }
      }
    } else {
      for (const w of waiting) {
        const user = await platform.findUserByEmail(w.email);
        if (user) found.set(w.employee_id, user.id);
      }
    }
  } catch (error) {
    // No GET users on this platform: each account's next action looks it up (or waits as needs-identity).
    if (!isNotOffered(error)) throw error;
  }
  for (const [employeeId, platformUserId] of found) await learnPlatformUserId(scope, employeeId, platformUserId);
  // Each create's audit row records what its identity holds now (an id another identity held stays unlearned).
  const now = new Map((await identitiesOf(scope, waiting.map((w) => w.employee_id))).map((i) => [i.employee_id, i.platform_user_id]));
  await markCreatesResolved(scope, waiting.flatMap((w) => (now.has(w.employee_id) ? [{ actionId: w.action_id, platformUserId: now.get(w.employee_id) ?? null }] : [])));
  deps.log.info({ org, tried: waiting.length, found: found.size, paged }, 'platform ids of SCIM-created accounts resolved');
  return { ran: true, tried: waiting.length, found: found.size, requests: paged ? 'paged' : 'one-by-one', createsQueued: open > 0 };
}
