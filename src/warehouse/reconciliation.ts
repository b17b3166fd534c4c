import { sql, type Kysely } from 'kysely';
import type { Database } from './database.ts';
import type { HrReconciliationView, ReconciliationKind } from './group-tables.ts';

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
}

/** Counts and a few examples per kind from `training.hr_reconciliation`, for one organisation. */
export async function reconciliationReport(db: Kysely<Database>, org: string, examples = 5): Promise<ReconciliationReport> {
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
  };
}
