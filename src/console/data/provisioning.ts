import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import { type ActionListRow, countNeedingAttention, type FeedListRow, recentFeedRows, searchActionRows } from '../../provisioning/index.ts';
import type { Database } from '../../warehouse/database.ts';
import type { OrgDb, OrgScopes } from '../../warehouse/scope.ts';

type Db = Kysely<Database>;

/**
 * Every query names the organisations it reads (`orgs`: the page's scope); actions and feeds are per organisation (0016).
 * Actions and feeds are read through their stores (src/provisioning/apply/); the console's own changes are this file's.
 */

/** An action as the console shows it: the store's row, its before and after checked as JSON objects (null before: none, as for a create). */
export type ActionRow = Omit<ActionListRow, 'before' | 'after'> & { before: Record<string, unknown> | null; after: Record<string, unknown> };

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

/** The provisioning audit trail, newest first, filtered. */
export async function searchActions(db: Db, orgs: readonly string[], filter: AuditFilter): Promise<ListPage<ActionRow>> {
  const rows = await searchActionRows(db, orgs, {
    who: filter.who,
    day: filter.day,
    status: filter.status,
    feedHash: filter.feed,
    limit: filter.pageSize + 1,
    offset: (filter.page - 1) * filter.pageSize,
  });
  const checked = rows.map((r) => ({ ...r, before: r.before === null ? null : stateColumn.parse(r.before), after: stateColumn.parse(r.after) }));
  return pageOf(checked, filter.pageSize);
}

export type FeedRow = FeedListRow;

/** One page of the feeds read, newest first. */
export async function recentFeeds(db: Db, orgs: readonly string[], list: { page: number; pageSize: number }): Promise<ListPage<FeedRow>> {
  const rows = await recentFeedRows(db, orgs, { limit: list.pageSize + 1, offset: (list.page - 1) * list.pageSize });
  return pageOf(rows, list.pageSize);
}

export function attentionCount(db: Db, orgs: readonly string[]): Promise<number> {
  return countNeedingAttention(db, orgs);
}

/**
 * Audits a change: in the organisation of `on` (the row's own), or, given the unscoped handle
 * (`scopes`), one that spans all, recorded with no organisation (bull-board's queue actions).
 */
export async function recordConsoleChange(
  on: OrgDb | Pick<OrgScopes, 'unscoped'>,
  change: { username: string; role: string; action: string; target: string; detail?: Record<string, unknown> },
): Promise<void> {
  const [db, org] = 'unscoped' in on ? [on.unscoped, null] : [on.db, on.org];
  await sql`insert into trainsync.console_audit (org, username, role, action, target, detail)
            values (${org}, ${change.username}, ${change.role}, ${change.action}, ${change.target}, ${JSON.stringify(change.detail ?? {})}::jsonb)`.execute(db);
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
