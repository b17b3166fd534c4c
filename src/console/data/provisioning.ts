import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../warehouse/database.ts';

type Db = Kysely<Database>;

/** Every query names the organisations it reads (`orgs`: the page's scope); actions and feeds are per organisation (0016). */

export interface ActionRow {
  org: string;
  action_id: string;
  employee_id: string;
  email: string;
  kind: string;
  group_id: string | null;
  /** The group's name from training.groups (null: not a group action, or no groups sync named it). */
  group_name: string | null;
  status: string;
  error_code: string | null;
  error_message: string | null;
  attempts: number;
  /** The state the action moved from (null: none, as for a create) and to, as JSON objects. */
  before: Record<string, unknown> | null;
  after: Record<string, unknown>;
  updated_at: Date;
}

/** One page of a list, newest first: `hasMore` when an older page exists. */
export interface ListPage<T> {
  rows: T[];
  hasMore: boolean;
}

/** The jsonb columns before and after, checked at the edge: objects of JSON values. */
const stateColumn = z.record(z.string(), z.json());

/** `limit pageSize + 1`: the one row past the page says whether another page exists. */
const pageOf = <T>(rows: T[], pageSize: number): ListPage<T> => ({ rows: rows.slice(0, pageSize), hasMore: rows.length > pageSize });

export interface AuditFilter {
  /** Employee id or e-mail (substring, case-insensitive). */
  who?: string | undefined;
  /** A UTC day, YYYY-MM-DD. */
  day?: string | undefined;
  status?: string | undefined;
  /** The hash of the feed whose actions to show (a "Feeds read" count links here). */
  feed?: string | undefined;
  page: number;
  pageSize: number;
}

/** The provisioning audit trail, newest first, filtered. Indexed by (employee_id, created_at) and updated order. */
export async function searchActions(db: Db, orgs: readonly string[], filter: AuditFilter): Promise<ListPage<ActionRow>> {
  const conditions = [sql`org = any(${orgs}::text[])`];
  if (filter.who) {
    const who = filter.who.trim();
    conditions.push(sql`(employee_id = ${who} or lower(email) like ${`%${who.toLowerCase().replace(/[%_\\]/g, (c) => `\\${c}`)}%`})`);
  }
  if (filter.day) conditions.push(sql`updated_at >= ${filter.day}::date and updated_at < ${filter.day}::date + 1`);
  if (filter.status) conditions.push(sql`status = ${filter.status}`);
  if (filter.feed) conditions.push(sql`feed_hash = ${filter.feed}`);
  const { rows } = await sql<Omit<ActionRow, 'before' | 'after'> & { before: unknown; after: unknown }>`
    select a.org, a.action_id, a.employee_id, a.email, a.kind, a.group_id, g.name as group_name, a.status, a.error_code, a.error_message, a.attempts, a.before, a.after, a.updated_at
      from (select * from trainsync.provisioning_actions where ${sql.join(conditions, sql` and `)}
             order by updated_at desc, id desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}) a
      left join training.groups g on g.org = a.org and g.group_id = a.group_id
     order by a.updated_at desc, a.id desc`.execute(db);
  const checked = rows.map((r) => ({ ...r, before: r.before === null ? null : stateColumn.parse(r.before), after: stateColumn.parse(r.after) }));
  return pageOf(checked, filter.pageSize);
}

export interface FeedRow {
  id: number;
  org: string;
  hash: string;
  path: string;
  mode: string;
  dry_run: boolean;
  rows: number;
  errors: number;
  actions: number;
  refused: string | null;
  created_at: Date;
}

/** One page of the feeds read, newest first. */
export async function recentFeeds(db: Db, orgs: readonly string[], list: { page: number; pageSize: number }): Promise<ListPage<FeedRow>> {
  const { rows } = await sql<FeedRow>`
    select id, org, hash, regexp_replace(path, '^.*/', '') as path, mode, dry_run, rows, errors, actions, refused, created_at
      from trainsync.feeds where org = any(${orgs}::text[]) order by id desc limit ${list.pageSize + 1} offset ${(list.page - 1) * list.pageSize}`.execute(db);
  return pageOf(rows, list.pageSize);
}

export async function attentionCount(db: Db, orgs: readonly string[]): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from trainsync.provisioning_actions where org = any(${orgs}::text[]) and status in ('failed', 'needs-identity')`.execute(db);
  return rows[0]?.n ?? 0;
}

/** `org`: the organisation the change acted in (the row's own); null for one that spans all (bull-board's queue actions). */
export async function recordConsoleChange(db: Db, change: { org: string | null; username: string; role: string; action: string; target: string; detail?: Record<string, unknown> }): Promise<void> {
  await sql`insert into trainsync.console_audit (org, username, role, action, target, detail)
            values (${change.org}, ${change.username}, ${change.role}, ${change.action}, ${change.target}, ${JSON.stringify(change.detail ?? {})}::jsonb)`.execute(db);
}

export interface ConsoleChangeRow {
  org: string | null;
  username: string;
  role: string;
  action: string;
  target: string;
  at: Date;
}

/**
 * One page of the console's own changes in `orgs`, and those that span every organisation
 * (unless `spanning` is false: a user limited to some organisations sees none of those), newest first.
 */
export async function consoleChanges(db: Db, orgs: readonly string[], list: { page: number; pageSize: number; spanning?: boolean }): Promise<ListPage<ConsoleChangeRow>> {
  const spanning = list.spanning ?? true;
  const { rows } = await sql<ConsoleChangeRow>`
    select org, username, role, action, target, at from trainsync.console_audit where (${spanning}::boolean and org is null) or org = any(${orgs}::text[])
     order by id desc limit ${list.pageSize + 1} offset ${(list.page - 1) * list.pageSize}`.execute(db);
  return pageOf(rows, list.pageSize);
}
