import { sql } from 'kysely';
import type { HrReconciliationView, ReconciliationKind } from './employee-tables.ts';
import type { OrgDb } from '../warehouse/scope.ts';

/** Every kind `training.hr_reconciliation` reports, in the order reports list them. */
export const RECONCILIATION_KINDS: readonly ReconciliationKind[] = ['active_without_account', 'leaver_with_access', 'account_without_employee', 'pending_action'];

export interface ReconciliationReport {
  /** The organisation reported on: its employees against the accounts its key lists. */
  org: string;
  /** Discrepancies per kind; every kind is present (0 when none). */
  counts: Record<ReconciliationKind, number>;
  total: number;
  /** The first `examples` rows of each kind, by e-mail. */
  examples: Record<ReconciliationKind, HrReconciliationView[]>;
  /** False until an HR feed was loaded (provision or load-feed): the counts then compare nothing. */
  hrFeedLoaded: boolean;
  /** False until `sync users` ran: no account can be matched then. */
  usersLoaded: boolean;
  /** How old the platform's side of the comparison is: see PlatformListAge. */
  platformList: PlatformListAge;
}

/**
 * The platform's user list the report compares with is the last users sync's (training.users),
 * not the platform now: trainsync may have changed accounts since.
 */
export interface PlatformListAge {
  /** When the last users sync read the list (the latest last_seen_at); null before any. */
  readAt: Date | null;
  /** Provisioning actions trainsync applied (succeeded) after that: changes the list does not show. */
  changesSince: number;
  /**
   * Leavers the list shows with access whom trainsync disabled after it was read: repaired,
   * so not counted as leaver_with_access (the view's rule, the same here).
   */
  repairedSince: number;
}

/** Counts and a few examples per kind from `training.hr_reconciliation`, for one organisation. */
export async function reconciliationReport(scope: OrgDb, examples = 5): Promise<ReconciliationReport> {
  const { db, org } = scope;
  const counts = Object.fromEntries(RECONCILIATION_KINDS.map((k) => [k, 0])) as Record<ReconciliationKind, number>;
  const byKind = Object.fromEntries(RECONCILIATION_KINDS.map((k) => [k, [] as HrReconciliationView[]])) as Record<ReconciliationKind, HrReconciliationView[]>;
  // One pass over the view: its count per kind, and the first rows of each kind.
  const { rows } = await sql<HrReconciliationView & { n: number; rank: number }>`
    select kind, employee_id, email, user_id, detail, org, n, rank from (
      select r.*, count(*) over (partition by kind)::int as n,
             row_number() over (partition by kind order by email nulls last, employee_id, user_id)::int as rank
      from training.hr_reconciliation r
      where r.org = ${org}
    ) ranked
    where rank <= greatest(${examples}::int, 1)
    order by kind, rank`.execute(db);
  for (const { n, rank, ...row } of rows) {
    counts[row.kind] = n;
    if (rank <= examples) byKind[row.kind].push(row);
  }
  const platformList = await platformListAge(scope);
  const { rows: loaded } = await sql<{ employees: boolean; users: boolean }>`
    select exists (select 1 from training.employees where org = ${org}) as employees,
           exists (select 1 from training.users where org = ${org}) as users`.execute(db);
  return {
    org,
    counts,
    total: Object.values(counts).reduce((a, b) => a + b, 0),
    examples: byKind,
    hrFeedLoaded: loaded[0]?.employees ?? false,
    usersLoaded: loaded[0]?.users ?? false,
    platformList,
  };
}

/**
 * When training.users was read, what trainsync applied after, and the leavers with access
 * in it that trainsync has disabled since. The last count mirrors the exclusion in
 * training.hr_reconciliation's leaver_with_access (sql/views/70): the same leavers, the same
 * latest access action, the same comparison with the account's last_seen_at.
 */
export async function platformListAge({ db, org }: OrgDb): Promise<PlatformListAge> {
  const { rows } = await sql<{ read_at: Date | null; changes_since: number; repaired_since: number }>`
    with listing as (select max(last_seen_at) as read_at from training.users where org = ${org}),
    latest_access as (
      select distinct on (a.employee_id) a.employee_id, a.kind, a.status, a.finished_at
        from trainsync.provisioning_actions a
       where a.org = ${org} and a.kind in ('enable', 'disable') and a.status <> 'skipped'
       order by a.employee_id, a.id desc
    ),
    employee_accounts as (
      select e.employee_id, e.status, e.removed_at, coalesce(e.user_id, m.user_id) as account_id
        from training.employees e
        left join lateral (
          select m.user_id from training.users m
           where e.user_id is null and m.org = e.org and lower(m.email) = lower(e.email) and m.removed_at is null
           order by m.user_id limit 1
        ) m on true
       where e.org = ${org}
    ),
    accounts as (
      select ea.employee_id, u.last_seen_at
        from employee_accounts ea
        join training.users u on u.org = ${org} and u.user_id = ea.account_id and u.removed_at is null and u.has_access
       where (ea.status = 'inactive' or ea.removed_at is not null)
         and not exists (select 1 from employee_accounts o where o.account_id = u.user_id and o.removed_at is null and o.status = 'active')
    )
    select (select read_at from listing) as read_at,
           (select count(*)::int from trainsync.provisioning_actions a
             where a.org = ${org} and a.status = 'succeeded'
               and a.finished_at > coalesce((select read_at from listing), '-infinity')) as changes_since,
           (select count(distinct ac.employee_id)::int from accounts ac
              join latest_access la on la.employee_id = ac.employee_id
             where la.kind = 'disable' and la.status = 'succeeded' and la.finished_at > ac.last_seen_at) as repaired_since`.execute(db);
  const row = rows[0];
  return { readAt: row?.read_at ?? null, changesSince: row?.changes_since ?? 0, repairedSince: row?.repaired_since ?? 0 };
}
