/**
 * The store of `trainsync.sync_schedules`: each organisation's schedule of each synced
 * resource, as the worker that registers the schedules last wrote it. Every statement that
 * names the table is here (test/table-owners.test.ts keeps it so); the freshness view
 * (sql/views/80_freshness.sql) reads it too, and the metrics through `syncSchedulesOf`.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';

type Db = Kysely<Database>;

/** One organisation's schedule of one resource. */
export interface SyncScheduleRow {
  org: string;
  resource: string;
  /** The cron line registered (UTC, spread included). */
  pattern: string;
  /** The longest gap between two fires, in seconds; null when it fires less than twice in 400 days. */
  everySeconds: number | null;
}

/**
 * Makes the table hold exactly `rows`: each written (unchanged ones left alone) and every other
 * row deleted (a schedule switched off, an organisation no longer configured). One statement,
 * over a handle that sees every organisation (`acrossOrganisations`).
 */
export async function replaceSyncSchedules(db: Db, rows: readonly SyncScheduleRow[]): Promise<void> {
  await sql`
    with wanted as (
      select * from unnest(${rows.map((r) => r.org)}::text[], ${rows.map((r) => r.resource)}::text[],
        ${rows.map((r) => r.pattern)}::text[], ${rows.map((r) => r.everySeconds)}::int[]) as w(org, resource, pattern, every_seconds)
    ), gone as (
      delete from trainsync.sync_schedules s
       where not exists (select 1 from wanted w where w.org = s.org and w.resource = s.resource)
    )
    insert into trainsync.sync_schedules (org, resource, pattern, every_seconds)
    select org, resource, pattern, every_seconds from wanted
    on conflict (org, resource) do update set pattern = excluded.pattern, every_seconds = excluded.every_seconds, updated_at = now()
     where (sync_schedules.pattern, sync_schedules.every_seconds) is distinct from (excluded.pattern, excluded.every_seconds)`.execute(db);
}

/** The schedules of the organisations of `orgs`: one statement. */
export async function syncSchedulesOf(db: Db, orgs: readonly string[]): Promise<SyncScheduleRow[]> {
  if (orgs.length === 0) return [];
  const { rows } = await sql<{ org: string; resource: string; pattern: string; every_seconds: number | null }>`
    select org, resource, pattern, every_seconds from trainsync.sync_schedules
     where org = any(${[...orgs]}::text[]) order by org, resource`.execute(db);
  return rows.map((r) => ({ org: r.org, resource: r.resource, pattern: r.pattern, everySeconds: r.every_seconds }));
}
