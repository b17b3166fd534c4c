import type pg from 'pg';
import { DEFAULT_ORG } from '../settings/orgs-file.ts';
import { copyChunks, copyLines, type CopyValue } from '../warehouse/copy-text.ts';
import { jsonbText } from '../warehouse/jsonb-text.ts';
import type { OrgRef, OrgScope } from '../warehouse/scope.ts';
import type { EmployeeStatus } from './employee-tables.ts';

/**
 * The store of the HR snapshot: `training.employees` and `training.employee_history`. Every
 * statement that writes them is here (test/table-owners.test.ts keeps it so): a feed's
 * snapshot (`provision`, `load-feed`), SCIM's Users (src/scim/change.ts) and the accounts
 * provisioning learns all come through it. Reads are the warehouse's purpose: anyone reads.
 */

/** One employee as a feed states it (a feed row has this shape). */
export interface EmployeeSnapshotRow {
  employeeId: string;
  /** Stored lower-cased. */
  email: string;
  firstName: string | null;
  lastName: string | null;
  status: EmployeeStatus;
  attributes?: Readonly<Record<string, unknown>> | undefined;
  /** The feed's platform_user_id: used when trainsync.identities does not know the account. */
  platformUserId?: string | undefined;
}

export interface EmployeeSnapshotInput {
  /** Valid rows only, one per employee_id (the feed reader rejects duplicates). */
  rows: readonly EmployeeSnapshotRow[];
  /** full: employees not listed are marked removed; delta: only listed employees are touched. */
  mode: 'full' | 'delta';
  /** Employees whose rows were rejected: a full feed never marks them removed (nor changes them). */
  keepEmployeeIds?: ReadonlySet<string>;
  /** Lower case; the same, for a rejected row whose employee_id could not be read. */
  keepEmails?: ReadonlySet<string>;
  /** The snapshot's instant (valid_from / valid_to / *_at); default the database clock once the lock is held. */
  at?: Date;
}

export interface EmployeeSnapshotCounts {
  listed: number;
  /** Listed for the first time. */
  joined: number;
  /** Status, e-mail, names or attributes changed: a new history row. */
  changed: number;
  /** Marked removed earlier and listed again: removed_at cleared, a new history row. */
  returned: number;
  /** Full feed only: no longer listed, marked removed and their history row closed. */
  removed: number;
  unchanged: number;
  /** The instant the snapshot was taken at. */
  at: Date;
}

/**
 * Serialises snapshots of one organisation (provision runs, load-feed and SCIM, any process) for the
 * length of one transaction; organisations' rows are disjoint, so theirs run side by side.
 */
const SNAPSHOT_LOCK = 'trainsync:employees-snapshot';
// `default` keeps the bare name: a process of the previous version still serialises with this one.
const snapshotLock = ({ org }: OrgRef): string => (org === DEFAULT_ORG ? SNAPSHOT_LOCK : `${SNAPSHOT_LOCK}:${org}`);
/** Rows per COPY chunk: the text of one chunk is held at a time, not the whole feed's. */
const COPY_CHUNK = 5_000;

const STAGE = 'pg_temp.trainsync_stage_employees';
const CHANGES = 'pg_temp.trainsync_employee_changes';
const STAGE_SHAPE = [
  // The key: the joins below probe it, and a repeated employee fails the COPY instead of the upsert.
  ['employee_id', 'text primary key'],
  ['email', 'text not null'],
  ['first_name', 'text'],
  ['last_name', 'text'],
  ['status', 'text not null'],
  ['attributes', 'jsonb not null'],
  ['feed_user_id', 'uuid'],
] as const;
const STAGE_COLUMNS = STAGE_SHAPE.map(([name]) => name);
/** What a history row records: a change in any of these opens a new one. */
const TRACKED = ['email', 'first_name', 'last_name', 'status', 'attributes'] as const;
const tuple = (alias: string): string => `(${TRACKED.map((c) => `${alias}.${c}`).join(', ')})`;

// Per transaction (on commit drop): a pooled session never keeps a stage of an older shape.
const CREATE_STAGE = `create temp table trainsync_stage_employees (${STAGE_SHAPE.map(([n, t]) => `${n} ${t}`).join(', ')}) on commit drop`;

// Who joins, changes or returns, decided against the organisation's stored rows before anything
// is written. (Created, then filled: a CREATE TABLE AS takes no bind parameter.)
const CREATE_CHANGES = `create temp table trainsync_employee_changes (employee_id text primary key, joined boolean not null, returned boolean not null) on commit drop`;
const FIND_CHANGES = `
  insert into ${CHANGES} (employee_id, joined, returned)
  select s.employee_id, (e.employee_id is null) as joined, (e.removed_at is not null) as returned
  from ${STAGE} s left join training.employees e on e.org = $1 and e.employee_id = s.employee_id
  where e.employee_id is null or e.removed_at is not null or ${tuple('e')} is distinct from ${tuple('s')}`;

const CLOSE_CHANGED_HISTORY = `
  update training.employee_history h set valid_to = $1::timestamptz
  from ${CHANGES} c where h.org = $2 and h.employee_id = c.employee_id and h.valid_to is null`;

const OPEN_HISTORY = `
  insert into training.employee_history (org, employee_id, valid_from, ${TRACKED.join(', ')})
  select $2, s.employee_id, $1::timestamptz, ${TRACKED.map((c) => `s.${c}`).join(', ')}
  from ${STAGE} s join ${CHANGES} c on c.employee_id = s.employee_id`;

// Listed employees already stored: every one gets last_seen_at (a hash join, one pass);
// updated_at moves only when a value or the account changed, or the employee returns.
const UPDATE_LISTED = `
  update training.employees e set
    ${TRACKED.map((c) => `${c} = s.${c}`).join(',\n    ')},
    user_id = coalesce(i.platform_user_id, s.feed_user_id, e.user_id),
    last_seen_at = $1::timestamptz,
    updated_at = case
      when e.removed_at is not null
        or (${TRACKED.map((c) => `e.${c}`).join(', ')}, e.user_id)
           is distinct from (${TRACKED.map((c) => `s.${c}`).join(', ')}, coalesce(i.platform_user_id, s.feed_user_id, e.user_id))
      then $1::timestamptz else e.updated_at end,
    removed_at = null
  from ${STAGE} s left join trainsync.identities i on i.org = $2 and i.employee_id = s.employee_id
  where e.org = $2 and e.employee_id = s.employee_id`;

const INSERT_JOINED = `
  insert into training.employees (org, employee_id, ${TRACKED.join(', ')}, user_id, first_seen_at, last_seen_at, updated_at)
  select $2, s.employee_id, ${TRACKED.map((c) => `s.${c}`).join(', ')}, coalesce(i.platform_user_id, s.feed_user_id),
         $1::timestamptz, $1::timestamptz, $1::timestamptz
  from ${STAGE} s join ${CHANGES} c on c.employee_id = s.employee_id and c.joined
  left join trainsync.identities i on i.org = $2 and i.employee_id = s.employee_id`;

// A full feed: employees it does not list (and whose row was not rejected) are removed,
// and their current history row closes: "as of" a later moment they are not employees.
const MARK_REMOVED = `
  with gone as (
    update training.employees e set removed_at = $1::timestamptz, updated_at = $1::timestamptz
    where e.org = $4 and e.removed_at is null
      and not exists (select 1 from ${STAGE} s where s.employee_id = e.employee_id)
      -- NOT IN over a subquery is hashed: cheap however many rows were rejected.
      and e.employee_id not in (select unnest($2::text[]))
      and e.email not in (select unnest($3::text[]))
    returning e.employee_id
  ), closed as (
    update training.employee_history h set valid_to = $1::timestamptz
    from gone where h.org = $4 and h.employee_id = gone.employee_id and h.valid_to is null
    returning 1
  )
  select (select count(*) from gone)::int as removed, (select count(*) from closed)::int as closed`;

function stageRow(row: EmployeeSnapshotRow): CopyValue[] {
  return [
    row.employeeId,
    row.email.toLowerCase(),
    row.firstName,
    row.lastName,
    row.status,
    jsonbText(row.attributes ?? {}),
    row.platformUserId ?? null,
  ];
}

/** The rows as COPY text, one chunk at a time. */
function* chunksOf(rows: readonly EmployeeSnapshotRow[]): Generator<string> {
  for (let at = 0; at < rows.length; at += COPY_CHUNK) {
    yield copyLines(rows.slice(at, at + COPY_CHUNK).map(stageRow));
  }
}

async function stage(client: pg.PoolClient, rows: readonly EmployeeSnapshotRow[]): Promise<void> {
  await client.query(CREATE_STAGE);
  await copyChunks(client, STAGE, STAGE_COLUMNS, chunksOf(rows));
}

/**
 * Snapshots one organisation's feed into `training.employees` and `training.employee_history`, in one
 * transaction, set-based: the rows are COPYed into a temp stage, compared with the
 * stored ones (`IS DISTINCT FROM`), and then history rows of changed employees are
 * closed and opened, employees upserted, and (full mode) the unlisted ones marked
 * removed with their history row closed. A returning employee (removed, then listed)
 * gets removed_at cleared and a new history row. Rejected rows are not in `rows`, so
 * they change nothing, and `keep*` stops a full feed from taking them for leavers.
 * Snapshots are serialised by a transaction-scoped advisory lock.
 */
export async function snapshotEmployees(scope: OrgScope, input: EmployeeSnapshotInput): Promise<EmployeeSnapshotCounts> {
  return scope.transaction(async ({ client, org }) => {
    await client.query('select pg_advisory_xact_lock(hashtext($1))', [snapshotLock(scope)]);
    // Taken after the lock: a snapshot that waited is still later than the one it waited for.
    const at = input.at ?? (await client.query<{ at: Date }>('select clock_timestamp() as at')).rows[0]!.at;
    await stage(client, input.rows);
    await client.query(CREATE_CHANGES);
    await client.query(FIND_CHANGES, [org]);
    const { rows: kinds } = await client.query<{ joined: number; returned: number; changed: number }>(
      `select count(*) filter (where joined)::int as joined, count(*) filter (where returned)::int as returned,
              count(*) filter (where not joined and not returned)::int as changed
       from ${CHANGES}`,
    );
    await client.query(CLOSE_CHANGED_HISTORY, [at, org]);
    await client.query(OPEN_HISTORY, [at, org]);
    await client.query(UPDATE_LISTED, [at, org]);
    await client.query(INSERT_JOINED, [at, org]);
    let removed = 0;
    if (input.mode === 'full') {
      const { rows } = await client.query<{ removed: number }>(MARK_REMOVED, [
        at,
        [...(input.keepEmployeeIds ?? [])],
        [...(input.keepEmails ?? [])].map((e) => e.toLowerCase()),
        org,
      ]);
      removed = rows[0]!.removed;
    }
    const { joined, returned, changed } = kinds[0]!;
    return { listed: input.rows.length, joined, changed, returned, removed, unchanged: input.rows.length - joined - changed - returned, at };
  });
}

/**
 * Refreshes `user_id` of current employees from trainsync.identities (accounts that
 * provisioning created or adopted since the last snapshot); returns how many changed.
 */
export async function refreshEmployeeAccounts({ lend, org }: OrgScope): Promise<number> {
  return lend(async (client) => {
    const { rowCount } = await client.query(
      `update training.employees e set user_id = i.platform_user_id, updated_at = clock_timestamp()
       from trainsync.identities i
       where e.org = $1 and i.org = e.org and i.employee_id = e.employee_id and i.platform_user_id is not null
         and e.user_id is distinct from i.platform_user_id`,
      [org],
    );
    return rowCount ?? 0;
  });
}

/**
 * Gives employees without an account the one their create job made (a SCIM create is
 * answered before the platform call, so its employee row is written without it). Only
 * rows with user_id null are looked at (an index range), so the SCIM sweep can run it often.
 */
export async function fillNewAccounts({ lend, org }: OrgScope): Promise<number> {
  return lend(async (client) => {
    const { rowCount } = await client.query(
      `update training.employees e set user_id = i.platform_user_id, updated_at = clock_timestamp()
       from trainsync.identities i
       where e.org = $1 and e.user_id is null and i.org = e.org and i.employee_id = e.employee_id and i.platform_user_id is not null`,
      [org],
    );
    return rowCount ?? 0;
  });
}
