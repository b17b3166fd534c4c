import { sql, type Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import type { PgLender } from '../warehouse/transaction.ts';

/** Refused deliveries kept at most; a flood of bad signatures cannot grow the table past this. */
export const REFUSALS_KEPT = 10_000;

export interface WebhookRefusal {
  reason: 'missing' | 'invalid';
  /** The signature header that was checked (its name, never its value). */
  header: string;
  remote: string | undefined;
}

/** Records one delivery refused for its signature: no body, no signature value. */
export async function recordRefusal(lend: PgLender, refusal: WebhookRefusal): Promise<void> {
  await lend((client) => client.query('insert into trainsync.webhook_refusals (reason, header, remote) values ($1, $2, $3)', [refusal.reason, refusal.header, refusal.remote ?? null]));
}

/** Keeps the last REFUSALS_KEPT refusals, none older than `retentionDays`; returns how many went. */
export async function pruneRefusals(db: Kysely<Database>, retentionDays: number): Promise<number> {
  const result = await sql`
    delete from trainsync.webhook_refusals
     where refused_at < now() - make_interval(days => ${retentionDays})
        or id <= (select id from trainsync.webhook_refusals order by id desc offset ${REFUSALS_KEPT} limit 1)`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

export interface RefusalRow {
  refused_at: Date;
  reason: string;
  header: string;
  remote: string | null;
}

/** One page of refusals, newest first, and the count of the last 24 hours. */
export async function recentRefusals(db: Kysely<Database>, filter: { page: number; pageSize: number }): Promise<{ rows: RefusalRow[]; hasMore: boolean; lastDay: number }> {
  const [{ rows }, day] = await Promise.all([
    sql<RefusalRow>`select refused_at, reason, header, remote from trainsync.webhook_refusals
      order by id desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}`.execute(db),
    sql<{ n: number }>`select count(*)::int as n from trainsync.webhook_refusals where refused_at > now() - interval '24 hours'`.execute(db),
  ]);
  return { rows: rows.slice(0, filter.pageSize), hasMore: rows.length > filter.pageSize, lastDay: day.rows[0]?.n ?? 0 };
}
