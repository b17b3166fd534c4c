import { sql } from 'kysely';
import { isNotOffered } from '../platform/errors.ts';
import type { PlatformClient } from '../platform/types.ts';
import { latestCleanRunStart } from '../sync/index.ts';
import type { OrgDb } from '../warehouse/scope.ts';
import { lastIdentityWriteSql } from './apply/identities-store.ts';
import type { PlatformAccount, PlatformView } from './plan/types.ts';

/**
 * The platform's accounts as they are now, for the planner (see plan.ts): from
 * `training.users` when a users sync saw the platform after trainsync's last
 * provisioning write and recently enough, else from GET users (paged, within the
 * shared request budget). Group membership is not read: the vendor's API has no
 * read of it.
 */

export interface PlatformViewOptions {
  /** TRAINSYNC_PLATFORM_FRESHNESS_MINUTES; 0 = always GET users. */
  freshnessMinutes: number;
  /**
   * The platform ids of the only accounts the plan looks at (a delta feed); when they are
   * fewer than the pages of GET users, each is read on its own. Undefined = every account.
   */
  touchedIds?: readonly string[] | undefined;
  signal?: AbortSignal | undefined;
}

export interface PlatformViewResult {
  /** Undefined when the platform offers no GET users (then drift cannot be seen). */
  view: PlatformView | undefined;
  /** Why there is no view. */
  note?: string;
  /** Requests made to the platform (pages of GET users); 0 when training.users served. */
  requests: number;
}

interface AccountSource {
  id: string;
  email: string;
  hasAccess: boolean;
}

function buildView(accounts: Iterable<AccountSource>, source: PlatformView['source'], asOf: Date, complete: boolean): PlatformView {
  const byId = new Map<string, PlatformAccount>();
  const byEmail = new Map<string, PlatformAccount>();
  for (const a of accounts) {
    const account: PlatformAccount = { id: a.id.toLowerCase(), email: a.email.toLowerCase(), hasAccess: a.hasAccess };
    byId.set(account.id, account);
    byEmail.set(account.email, account);
  }
  return { byId, byEmail, complete, source, asOf };
}

/** A view from a complete GET users listing already read (the first run's adoption reads one). */
export function viewFromUsers(users: Iterable<AccountSource>): PlatformView {
  return buildView(users, 'api', new Date(), true);
}

/**
 * When training.users may stand for the platform: the start of the latest users sync
 * that succeeded with every record read, if it started within the freshness window and
 * after trainsync's last provisioning write (a listing taken before that write does
 * not show it, and would have the planner repeat it).
 */
export async function freshUsersSnapshot(scope: OrgDb, freshnessMinutes: number): Promise<Date | undefined> {
  if (freshnessMinutes <= 0) return undefined;
  // The organisation's own users sync and provisioning writes: another org's listing says nothing of this one's accounts.
  return latestCleanRunStart(scope, 'users', { withinMinutes: freshnessMinutes, after: lastIdentityWriteSql(scope) });
}

async function warehouseView({ db, org }: OrgDb, asOf: Date): Promise<PlatformView> {
  // Raw SQL: training.users' row type (with its org) is the sync wing's.
  const { rows } = await sql<{ user_id: string; email: string; has_access: boolean }>`
    select user_id, email, has_access from training.users where org = ${org} and removed_at is null`.execute(db);
  // A quarantined record fails the run's freshness test, so the listing is whole.
  return buildView(rows.map((r) => ({ id: r.user_id, email: r.email, hasAccess: r.has_access })), 'warehouse', asOf, true);
}

/**
 * Every account through GET users (undefined view when the platform does not offer it),
 * and the requests made. With `touchedIds` fewer than the pages left after the first,
 * each of those accounts is read on its own instead (`GET users?userId=`).
 */
export async function readAccountsFromApi(
  platform: PlatformClient,
  signal?: AbortSignal,
  touchedIds?: readonly string[],
): Promise<{ view: PlatformView | undefined; requests: number }> {
  const accounts: AccountSource[] = [];
  let requests = 0;
  let complete = true;
  const asOf = new Date();
  const pages = platform.listUsers({}, signal ? { signal } : {})[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await pages.next();
      if (next.done) break;
      const page = next.value;
      requests += 1;
      accounts.push(...page.records);
      if (page.problems.length > 0) complete = false;
      if (requests > 1 || touchedIds === undefined || page.totalEntities === undefined) continue;
      const pageSize = Math.max(1, page.records.length + page.problems.length);
      if (touchedIds.length >= Math.ceil(page.totalEntities / pageSize) - 1) continue;
      const targeted = await readAccountsById(platform, touchedIds, signal);
      requests += targeted.requests;
      if (targeted.accounts !== undefined) {
        await pages.return?.(undefined);
        return { view: buildView(targeted.accounts, 'api', asOf, true), requests };
      }
    }
  } catch (error) {
    if (isNotOffered(error)) return { view: undefined, requests: requests + 1 };
    throw error;
  }
  return { view: buildView(accounts, 'api', asOf, complete), requests };
}

/**
 * The given accounts, one `GET users?userId=` each (an unknown id lists nothing: the
 * account is gone). `accounts` is undefined when the platform ignores the filter (an
 * older revision answers with other accounts): then only the full listing tells.
 */
async function readAccountsById(
  platform: PlatformClient,
  ids: readonly string[],
  signal: AbortSignal | undefined,
): Promise<{ accounts: AccountSource[] | undefined; requests: number }> {
  const found: AccountSource[] = [];
  let requests = 0;
  for (const id of ids) {
    const wanted = id.toLowerCase();
    requests += 1;
    for await (const page of platform.listUsers({ userId: wanted }, signal ? { signal } : {})) {
      if (page.problems.length > 0 || page.records.some((u) => u.id.toLowerCase() !== wanted)) return { accounts: undefined, requests };
      found.push(...page.records);
      break;
    }
  }
  return { accounts: found, requests };
}

/** Reads the platform's accounts: training.users when fresh enough (see freshUsersSnapshot), else GET users. */
/** Reads one organisation's accounts: `deps.platform` must be that organisation's client (its key). */
export async function readPlatformView(deps: { scope: OrgDb; platform: PlatformClient }, options: PlatformViewOptions): Promise<PlatformViewResult> {
  const fresh = await freshUsersSnapshot(deps.scope, options.freshnessMinutes);
  if (fresh !== undefined) return { view: await warehouseView(deps.scope, fresh), requests: 0 };
  const { view, requests } = await readAccountsFromApi(deps.platform, options.signal, options.touchedIds);
  if (view === undefined) return { view, requests, note: 'the platform offers no GET users' };
  return { view, requests };
}

/**
 * Since when HR says each leaver left (YYYY-MM-DD, UTC), from training.employees: the day
 * a full feed stopped listing them, else the day their current (inactive) version began.
 */
export async function loadLeaverSince({ db, org }: OrgDb): Promise<Map<string, string>> {
  const { rows } = await sql<{ employee_id: string; since: string }>`
    select e.employee_id, to_char(coalesce(e.removed_at, h.valid_from) at time zone 'UTC', 'YYYY-MM-DD') as since
      from training.employees e
      left join training.employee_history h on h.org = e.org and h.employee_id = e.employee_id and h.valid_to is null
     where e.org = ${org} and (e.removed_at is not null or e.status = 'inactive')`.execute(db);
  return new Map(rows.filter((r) => r.since !== null).map((r) => [r.employee_id, r.since]));
}
