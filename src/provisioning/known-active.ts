import { sql, type Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';

/**
 * The active employees trainsync knows for one organisation: those it last applied as active
 * (trainsync.identities) and those the last HR snapshot lists as active (training.employees,
 * not removed), each counted once. The base of the feed-shrink guard: a full feed leaves
 * every one of them it does not list without access (the first) or removed (the second).
 */
export async function countKnownActive(db: Kysely<Database>, org: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from (
      select employee_id from trainsync.identities where org = ${org} and active
      union
      select employee_id from training.employees where org = ${org} and status = 'active' and removed_at is null
    ) known`.execute(db);
  return rows[0]?.n ?? 0;
}
