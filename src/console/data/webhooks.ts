import { sql, type Kysely } from 'kysely';
import type { Database } from '../../warehouse/database.ts';

export interface EventRow {
  event_id: string;
  event_type: string;
  received_at: Date;
  processed_at: Date | null;
  outcome: string | null;
  error: string | null;
}

export async function recentEvents(db: Kysely<Database>, filter: { outcome?: string | undefined; page: number; pageSize: number }): Promise<{ rows: EventRow[]; hasMore: boolean }> {
  const where = filter.outcome === 'waiting' ? sql`where outcome is null` : filter.outcome ? sql`where outcome = ${filter.outcome}` : sql``;
  const { rows } = await sql<EventRow>`
    select event_id, event_type, received_at, processed_at, outcome, error from trainsync.webhook_events ${where}
     order by received_at desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}`.execute(db);
  return { rows: rows.slice(0, filter.pageSize), hasMore: rows.length > filter.pageSize };
}
