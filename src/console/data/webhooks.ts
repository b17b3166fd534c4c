import { sql, type Kysely } from 'kysely';
import type { Database } from '../../warehouse/database.ts';

export interface EventRow {
  org: string;
  event_id: string;
  event_type: string;
  received_at: Date;
  processed_at: Date | null;
  outcome: string | null;
  error: string | null;
}

/** One page of the events of `orgs`, newest first, filtered by outcome (`waiting`: not yet processed). */
export async function recentEvents(db: Kysely<Database>, orgs: readonly string[], filter: { outcome?: string | undefined; page: number; pageSize: number }): Promise<{ rows: EventRow[]; hasMore: boolean }> {
  const outcome = filter.outcome === 'waiting' ? sql`and outcome is null` : filter.outcome ? sql`and outcome = ${filter.outcome}` : sql``;
  const { rows } = await sql<EventRow>`
    select org, event_id, event_type, received_at, processed_at, outcome, error from trainsync.webhook_events where org = any(${orgs}::text[]) ${outcome}
     order by received_at desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}`.execute(db);
  return { rows: rows.slice(0, filter.pageSize), hasMore: rows.length > filter.pageSize };
}
