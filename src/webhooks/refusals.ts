import { sql, type Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import type { PgLender } from '../warehouse/transaction.ts';

/** Refused deliveries kept at most per organisation; a flood of bad signatures cannot grow the table past this. */
export const REFUSALS_KEPT = 10_000;

/**
 * Why a delivery was refused: `missing` or `invalid` signature (401: not signed with
 * this organisation's secret, e.g. another organisation's), or `organisation-mismatch`
 * (403: signed correctly, but its organisationId is not the GUID learned for this path).
 */
export type RefusalReason = 'missing' | 'invalid' | 'organisation-mismatch';

export interface WebhookRefusal {
  /** The organisation whose path was posted to. */
  org: string;
  reason: RefusalReason;
  /** The signature header that was checked (its name, never its value). */
  header: string;
  remote: string | undefined;
  /** Words for a person (the GUIDs of a mismatch); never a secret nor the body. */
  detail?: string;
}

/** Records one refused delivery: no body, no signature value. */
export async function recordRefusal(lend: PgLender, refusal: WebhookRefusal): Promise<void> {
  await lend((client) =>
    client.query('insert into trainsync.webhook_refusals (org, reason, header, remote, detail) values ($1, $2, $3, $4, $5)', [
      refusal.org,
      refusal.reason,
      refusal.header,
      refusal.remote ?? null,
      refusal.detail ?? null,
    ]),
  );
}

/** Keeps the last REFUSALS_KEPT refusals of each organisation, none older than `retentionDays`; returns how many went. */
export async function pruneRefusals(db: Kysely<Database>, retentionDays: number): Promise<number> {
  const result = await sql`
    delete from trainsync.webhook_refusals
     where refused_at < now() - make_interval(days => ${retentionDays})
        or id in (select id from (select id, row_number() over (partition by org order by id desc) as n from trainsync.webhook_refusals) ranked
                   where n > ${REFUSALS_KEPT})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

export interface RefusalRow {
  org: string;
  refused_at: Date;
  reason: string;
  header: string;
  remote: string | null;
  detail: string | null;
}

/** One page of the refusals of the organisations named, newest first, and the count of the last 24 hours. */
export async function recentRefusals(db: Kysely<Database>, orgs: readonly string[], filter: { page: number; pageSize: number }): Promise<{ rows: RefusalRow[]; hasMore: boolean; lastDay: number }> {
  const only = sql`org = any(${orgs}::text[])`;
  const [{ rows }, day] = await Promise.all([
    sql<RefusalRow>`select org, refused_at, reason, header, remote, detail from trainsync.webhook_refusals where ${only}
      order by id desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}`.execute(db),
    sql<{ n: number }>`select count(*)::int as n from trainsync.webhook_refusals where ${only} and refused_at > now() - interval '24 hours'`.execute(db),
  ]);
  return { rows: rows.slice(0, filter.pageSize), hasMore: rows.length > filter.pageSize, lastDay: day.rows[0]?.n ?? 0 };
}
