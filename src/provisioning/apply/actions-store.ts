import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { Database } from '../../warehouse/database.ts';
import type { ProvisioningActionKind, ProvisioningActionStatus, ProvisioningActionsTable, ProvisioningSource } from './tables.ts';
import type { ActionState, PlannedAction } from '../plan/types.ts';
import type { OrgDb } from '../../warehouse/scope.ts';

/**
 * The store of `trainsync.provisioning_actions`, the audit trail: one row per action id (the
 * BullMQ job id). Every statement that names the table is here (test/table-owners.test.ts
 * keeps it so): SCIM, the console and the commands call these functions with their scoped handle. The enqueuer writes the row first (status `queued`); the job counts
 * its attempts and records how it ended, in the same transaction as the identity
 * change it made. No secret ever goes in: a password change records only that it happened.
 * Per organisation: action ids repeat across organisations (they come from employee ids
 * and e-mails), so every read and write names the org; rows are unique by (org, action_id).
 */

type Db = Kysely<Database>;

/** Statuses a person has to look at; `status` lists them. */
export const ATTENTION_STATUSES: readonly ProvisioningActionStatus[] = ['failed', 'needs-identity'];

export interface AuditEntry {
  actionId: string;
  employeeId: string;
  email: string;
  kind: ProvisioningActionKind;
  groupId?: string | undefined;
  seq: number;
  before: ActionState | Record<string, unknown> | null;
  after: ActionState | Record<string, unknown>;
  feedHash: string | null;
  /** Which source planned it, and why (src/provisioning/pipeline): the same shape for every source. */
  source?: ProvisioningSource | null | undefined;
  reason?: string | null | undefined;
}

export function auditEntryFor(action: PlannedAction, feedHash: string | null, why: { source?: ProvisioningSource | null | undefined; reason?: string | null | undefined } = {}): AuditEntry {
  return {
    source: why.source ?? null,
    reason: why.reason ?? null,
    actionId: action.id,
    employeeId: action.employeeId,
    email: action.email,
    kind: action.kind,
    groupId: action.groupId,
    seq: action.seq,
    before: action.before,
    // A repair keeps its reason in the audit trail.
    after: action.repair === undefined ? action.after : { ...action.after, repair: action.repair },
    feedHash,
  };
}

/**
 * Writes (or re-opens) the audit rows of actions about to be enqueued. A row that
 * exists from an earlier run (failed, needs-identity) goes back to `queued`; its
 * attempts keep counting across runs.
 */
export async function recordQueuedActions({ db, org }: OrgDb, entries: readonly AuditEntry[]): Promise<void> {
  for (let i = 0; i < entries.length; i += 500) {
    const chunk = entries.slice(i, i + 500);
    await db
      .insertInto('trainsync.provisioning_actions')
      .values(
        chunk.map((e) => ({
          org,
          action_id: e.actionId,
          employee_id: e.employeeId,
          email: e.email,
          kind: e.kind,
          group_id: e.groupId ?? null,
          seq: e.seq,
          before: e.before === null ? null : JSON.stringify(e.before),
          after: JSON.stringify(e.after),
          status: 'queued' as const,
          feed_hash: e.feedHash,
          source: e.source ?? null,
          reason: e.reason ?? null,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['org', 'action_id']).doUpdateSet({
          status: 'queued',
          feed_hash: (eb) => eb.ref('excluded.feed_hash'),
          // A retry re-enqueues the row as it was: it keeps its source and reason.
          source: sql<ProvisioningSource | null>`coalesce(excluded.source, provisioning_actions.source)`,
          reason: sql<string | null>`coalesce(excluded.reason, provisioning_actions.reason)`,
          before: (eb) => eb.ref('excluded.before'),
          after: (eb) => eb.ref('excluded.after'),
          error_code: null,
          error_message: null,
          finished_at: null,
          updated_at: sql<Date>`now()`,
        }),
      )
      .execute();
    // An older action for the same change that needed a person (failed, needs-identity)
    // is settled by this one: `status` stops listing it.
    await sql`
      update trainsync.provisioning_actions a
         set status = 'skipped',
             error_message = coalesce(a.error_message, '') || ' (superseded by ' || n.action_id || ')',
             updated_at = now()
        from unnest(${chunk.map((e) => e.actionId)}::text[], ${chunk.map((e) => e.employeeId)}::text[],
                    ${chunk.map((e) => e.kind)}::text[], ${chunk.map((e) => e.groupId ?? null)}::uuid[])
             as n(action_id, employee_id, kind, group_id)
       where a.org = ${org} and a.employee_id = n.employee_id and a.kind = n.kind and a.group_id is not distinct from n.group_id
         and a.action_id <> n.action_id and a.status in ('failed', 'needs-identity')`.execute(db);
  }
}

/** Counts one attempt; returns the row's status before it (undefined when there is no row). */
export async function beginAttempt({ db, org }: OrgDb, actionId: string): Promise<ProvisioningActionStatus | undefined> {
  const row = await db
    .updateTable('trainsync.provisioning_actions')
    .set({ attempts: sql<number>`attempts + 1`, updated_at: sql<Date>`now()` })
    .where('org', '=', org)
    .where('action_id', '=', actionId)
    .returning('status')
    .executeTakeFirst();
  return row?.status;
}

export interface ActionEnd {
  status: 'succeeded' | 'failed' | 'needs-identity' | 'skipped';
  errorCode?: string | null;
  errorMessage?: string | null;
  /** Replaces the planned after-state when the job learned more (e.g. the platform user id). */
  after?: Record<string, unknown>;
}

/** Records how an action ended (final: sets finished_at). */
export async function finishAction({ db, org }: OrgDb, actionId: string, end: ActionEnd): Promise<void> {
  await db
    .updateTable('trainsync.provisioning_actions')
    .set({
      status: end.status,
      error_code: end.errorCode ?? null,
      error_message: end.errorMessage ?? null,
      ...(end.after === undefined ? {} : { after: sql<string>`after || ${JSON.stringify(end.after)}::jsonb` }),
      updated_at: sql<Date>`now()`,
      finished_at: sql<Date>`now()`,
    })
    .where('org', '=', org)
    .where('action_id', '=', actionId)
    .execute();
}

/** Keeps the last transient error of an action that BullMQ will retry; it stays `queued`. */
export async function recordRetryableError({ db, org }: OrgDb, actionId: string, errorCode: string, errorMessage: string): Promise<void> {
  await db
    .updateTable('trainsync.provisioning_actions')
    .set({ error_code: errorCode, error_message: errorMessage, updated_at: sql<Date>`now()` })
    .where('org', '=', org)
    .where('action_id', '=', actionId)
    .execute();
}

export interface AuditRow {
  actionId: string;
  employeeId: string;
  email: string;
  kind: ProvisioningActionKind;
  groupId: string | null;
  status: ProvisioningActionStatus;
  errorCode: string | null;
  errorMessage: string | null;
  attempts: number;
  updatedAt: Date;
}

const AUDIT_COLUMNS = ['action_id', 'employee_id', 'email', 'kind', 'group_id', 'status', 'error_code', 'error_message', 'attempts', 'updated_at'] as const;

type AuditColumns = Pick<Selectable<ProvisioningActionsTable>, (typeof AUDIT_COLUMNS)[number]>;

function toAuditRow(r: AuditColumns): AuditRow {
  return {
    actionId: r.action_id,
    employeeId: r.employee_id,
    email: r.email,
    kind: r.kind,
    groupId: r.group_id,
    status: r.status,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    attempts: r.attempts,
    updatedAt: r.updated_at,
  };
}

/** The audit rows of the given actions, in the order given. */
export async function auditRows({ db, org }: OrgDb, actionIds: readonly string[]): Promise<AuditRow[]> {
  const byId = new Map<string, AuditRow>();
  for (let i = 0; i < actionIds.length; i += 1000) {
    const chunk = actionIds.slice(i, i + 1000);
    if (chunk.length === 0) continue;
    const rows = await db.selectFrom('trainsync.provisioning_actions').select(AUDIT_COLUMNS).where('org', '=', org).where('action_id', 'in', chunk).execute();
    for (const r of rows) byId.set(r.action_id, toAuditRow(r));
  }
  return actionIds.flatMap((id) => byId.get(id) ?? []);
}

/** Actions still `queued` (or `planned`): their jobs may be waiting or running. Of the given employees only, when given. */
export async function openActions({ db, org }: OrgDb, employeeIds?: readonly string[]): Promise<AuditRow[]> {
  if (employeeIds?.length === 0) return [];
  let query = db.selectFrom('trainsync.provisioning_actions').select(AUDIT_COLUMNS).where('org', '=', org).where('status', 'in', ['planned', 'queued']);
  if (employeeIds !== undefined) query = query.where('employee_id', 'in', employeeIds);
  const rows = await query.execute();
  return rows.map(toAuditRow);
}

/** Failed and needs-identity actions, newest first: what `status` shows. */
export async function actionsNeedingAttention({ db, org }: OrgDb, limit = 50): Promise<AuditRow[]> {
  const rows = await db
    .selectFrom('trainsync.provisioning_actions')
    .select(AUDIT_COLUMNS)
    .where('org', '=', org)
    .where('status', 'in', [...ATTENTION_STATUSES])
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toAuditRow);
}

/** An action as recorded, for `retry` to enqueue it again as it was. */
export interface RecordedAction {
  action_id: string;
  employee_id: string;
  email: string;
  kind: string;
  group_id: string | null;
  seq: number;
  before: unknown;
  after: unknown;
  status: string;
  feed_hash: string | null;
}

export async function findAction({ db, org }: OrgDb, actionId: string): Promise<RecordedAction | undefined> {
  return db
    .selectFrom('trainsync.provisioning_actions')
    .select(['action_id', 'employee_id', 'email', 'kind', 'group_id', 'seq', 'before', 'after', 'status', 'feed_hash'])
    .where('org', '=', org)
    .where('action_id', '=', actionId)
    .executeTakeFirst();
}

/** The disables a source planned within `window` (a Postgres interval): the guards' rolling count. */
export async function countRecentDisables({ db, org }: OrgDb, source: string, window: string): Promise<number> {
  const { rows } = await sql<{ recent: number }>`
    select count(*)::int as recent from trainsync.provisioning_actions
     where org = ${org} and kind = 'disable' and source = ${source} and created_at > now() - ${window}::interval`.execute(db);
  return rows[0]?.recent ?? 0;
}

/** The employee's latest action still `queued` (or `planned`), if any: a new job of theirs can wait for it. */
export async function lastOpenAction({ db, org }: OrgDb, employeeId: string): Promise<string | undefined> {
  const open = await db
    .selectFrom('trainsync.provisioning_actions')
    .select('action_id')
    .where('org', '=', org)
    .where('employee_id', '=', employeeId)
    .where('status', 'in', ['planned', 'queued'])
    .orderBy(sql`created_at`, 'desc')
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  return open?.action_id;
}

/**
 * Creates that succeeded without a lookup (`lookUp: 'later'`) whose platform id was never
 * resolved, of the employees `ofEmployees` lists (a subquery: the sweep runs this often, so the
 * rows it would drop are never read).
 */
export async function unresolvedCreates({ db, org }: OrgDb, ofEmployees: RawBuilder<string>): Promise<Array<{ action_id: string; employee_id: string; updated_at: Date }>> {
  return db
    .selectFrom('trainsync.provisioning_actions')
    .select(['action_id', 'employee_id', 'updated_at'])
    .where('org', '=', org)
    .where('employee_id', 'in', ofEmployees)
    .where('kind', '=', 'create-user')
    .where('status', '=', 'succeeded')
    .where(sql<boolean>`after->>'lookUp' = 'later' and after->'resolved' is null`)
    .execute();
}

/** Creates still `queued` (or `planned`). */
export async function countOpenCreates({ db, org }: OrgDb): Promise<number> {
  const { open } = await db
    .selectFrom('trainsync.provisioning_actions')
    .select(sql<number>`count(*)::int`.as('open'))
    .where('org', '=', org)
    .where('kind', '=', 'create-user')
    .where('status', 'in', ['planned', 'queued'])
    .executeTakeFirstOrThrow();
  return open;
}

/** Records on each create's after-state whether its platform id was found (`resolved`) and which (null: not found). */
export async function markCreatesResolved({ db, org }: OrgDb, outcomes: ReadonlyArray<{ actionId: string; platformUserId: string | null }>): Promise<void> {
  if (outcomes.length === 0) return;
  await sql`
    update trainsync.provisioning_actions a
       set after = a.after || jsonb_build_object('resolved', n.platform_user_id is not null, 'platformUserId', n.platform_user_id)
      from unnest(${outcomes.map((o) => o.actionId)}::text[], ${outcomes.map((o) => o.platformUserId)}::uuid[]) as n(action_id, platform_user_id)
     where a.org = ${org} and a.action_id = n.action_id`.execute(db);
}

/** The console's row of an action: the group's name joined from training.groups, before and after as stored. */
export interface ActionListRow {
  org: string;
  action_id: string;
  employee_id: string;
  email: string;
  kind: string;
  group_id: string | null;
  group_name: string | null;
  status: string;
  error_code: string | null;
  error_message: string | null;
  attempts: number;
  before: unknown;
  after: unknown;
  updated_at: Date;
}

export interface ActionSearch {
  /** Employee id or e-mail (substring, case-insensitive). */
  who?: string | undefined;
  /** A UTC day, YYYY-MM-DD. */
  day?: string | undefined;
  status?: string | undefined;
  feedHash?: string | undefined;
  limit: number;
  offset: number;
}

/** The actions of `orgs` matching `search`, newest first. Indexed by (employee_id, created_at) and updated order. */
export async function searchActionRows(db: Db, orgs: readonly string[], search: ActionSearch): Promise<ActionListRow[]> {
  const conditions = [sql`org = any(${orgs}::text[])`];
  if (search.who) {
    const who = search.who.trim();
    conditions.push(sql`(employee_id = ${who} or lower(email) like ${`%${who.toLowerCase().replace(/[%_\\]/g, (c) => `\\${c}`)}%`})`);
  }
  if (search.day) conditions.push(sql`updated_at >= ${search.day}::date and updated_at < ${search.day}::date + 1`);
  if (search.status) conditions.push(sql`status = ${search.status}`);
  if (search.feedHash) conditions.push(sql`feed_hash = ${search.feedHash}`);
  const { rows } = await sql<ActionListRow>`
    select a.org, a.action_id, a.employee_id, a.email, a.kind, a.group_id, g.name as group_name, a.status, a.error_code, a.error_message, a.attempts, a.before, a.after, a.updated_at
      from (select * from trainsync.provisioning_actions where ${sql.join(conditions, sql` and `)}
             order by updated_at desc, id desc limit ${search.limit} offset ${search.offset}) a
      left join training.groups g on g.org = a.org and g.group_id = a.group_id
     order by a.updated_at desc, a.id desc`.execute(db);
  return rows;
}

/** Actions of `orgs` a person has to look at (ATTENTION_STATUSES). */
export async function countNeedingAttention(db: Db, orgs: readonly string[]): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from trainsync.provisioning_actions where org = any(${orgs}::text[]) and status in ('failed', 'needs-identity')`.execute(db);
  return rows[0]?.n ?? 0;
}

/** How many actions of each organisation of `orgs` need a person (ATTENTION_STATUSES), by slug; those with none are absent. One statement. */
export async function attentionCounts(db: Db, orgs: readonly string[]): Promise<Map<string, number>> {
  if (orgs.length === 0) return new Map();
  const { rows } = await sql<{ org: string; n: number }>`
    select org, count(*)::int as n from trainsync.provisioning_actions
     where org = any(${[...orgs]}::text[]) and status = any(${[...ATTENTION_STATUSES]}::text[]) group by org`.execute(db);
  return new Map(rows.map((r) => [r.org, r.n]));
}

/** An action needing a person, as `status` lists it. */
export interface AttentionAction {
  org: string;
  action_id: string;
  employee_id: string;
  email: string | null;
  status: string;
  error_code: string | null;
  attempts: number;
  updated_at: Date;
  error_message: string | null;
}

/** The newest `perOrg` actions needing a person of each organisation of `orgs`, by organisation, newest first: one statement for all (`status`). */
export async function attentionActionsOf(db: Db, orgs: readonly string[], perOrg: number): Promise<AttentionAction[]> {
  if (orgs.length === 0) return [];
  const { rows } = await sql<AttentionAction>`
    select org, action_id, employee_id, email, status, error_code, attempts, updated_at, error_message from (
      select a.*, row_number() over (partition by a.org order by a.updated_at desc, a.id desc) as n
      from trainsync.provisioning_actions a where a.org = any(${[...orgs]}::text[]) and a.status = any(${[...ATTENTION_STATUSES]}::text[])
    ) x where n <= ${perOrg} order by org, n`.execute(db);
  return rows;
}
