import { sql, type Kysely } from 'kysely';
import type { Database } from '../../warehouse/database.ts';

type Db = Kysely<Database>;

export interface ActionRow {
  action_id: string;
  employee_id: string;
  email: string;
  kind: string;
  group_id: string | null;
  status: string;
  error_code: string | null;
  error_message: string | null;
  attempts: number;
  before_text: string | null;
  after_text: string;
  updated_at: Date;
}

export interface AuditFilter {
  /** Employee id or e-mail (substring, case-insensitive). */
  who?: string | undefined;
  /** A UTC day, YYYY-MM-DD. */
  day?: string | undefined;
  status?: string | undefined;
  page: number;
  pageSize: number;
}

/** The provisioning audit trail, newest first, filtered. Indexed by (employee_id, created_at) and updated order. */
export async function searchActions(db: Db, filter: AuditFilter): Promise<{ rows: ActionRow[]; hasMore: boolean }> {
  const conditions = [sql`true`];
  if (filter.who) {
    const who = filter.who.trim();
    conditions.push(sql`(employee_id = ${who} or lower(email) like ${`%${who.toLowerCase().replace(/[%_\\]/g, (c) => `\\${c}`)}%`})`);
  }
  if (filter.day) conditions.push(sql`updated_at >= ${filter.day}::date and updated_at < ${filter.day}::date + 1`);
  if (filter.status) conditions.push(sql`status = ${filter.status}`);
  const { rows } = await sql<ActionRow>`
    select action_id, employee_id, email, kind, group_id, status, error_code, error_message, attempts,
           before::text as before_text, after::text as after_text, updated_at
      from trainsync.provisioning_actions where ${sql.join(conditions, sql` and `)}
     order by updated_at desc, id desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}`.execute(db);
  return { rows: rows.slice(0, filter.pageSize), hasMore: rows.length > filter.pageSize };
}

export interface FeedRow {
  id: number;
  path: string;
  mode: string;
  dry_run: boolean;
  rows: number;
  errors: number;
  actions: number;
  refused: string | null;
  created_at: Date;
}

export async function recentFeeds(db: Db, limit = 20): Promise<FeedRow[]> {
  const { rows } = await sql<FeedRow>`
    select id, regexp_replace(path, '^.*/', '') as path, mode, dry_run, rows, errors, actions, refused, created_at
      from trainsync.feeds order by id desc limit ${limit}`.execute(db);
  return rows;
}

export async function attentionCount(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from trainsync.provisioning_actions where status in ('failed', 'needs-identity')`.execute(db);
  return rows[0]?.n ?? 0;
}

export async function recordConsoleChange(db: Db, change: { username: string; role: string; action: string; target: string; detail?: Record<string, unknown> }): Promise<void> {
  await sql`insert into trainsync.console_audit (username, role, action, target, detail)
            values (${change.username}, ${change.role}, ${change.action}, ${change.target}, ${JSON.stringify(change.detail ?? {})}::jsonb)`.execute(db);
}

export async function consoleChanges(db: Db, limit = 50): Promise<Array<{ username: string; role: string; action: string; target: string; at: Date }>> {
  const { rows } = await sql<{ username: string; role: string; action: string; target: string; at: Date }>`
    select username, role, action, target, at from trainsync.console_audit order by id desc limit ${limit}`.execute(db);
  return rows;
}
