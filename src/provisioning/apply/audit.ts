import { sql, type Kysely, type Selectable } from 'kysely';
import type { Database } from '../../warehouse/database.ts';
import type { ProvisioningActionKind, ProvisioningActionStatus, ProvisioningActionsTable, ProvisioningSource } from '../../warehouse/provisioning-tables.ts';
import type { ActionState, PlannedAction } from '../plan/types.ts';

/**
 * The audit trail in `trainsync.provisioning_actions`: one row per action id (the
 * BullMQ job id). The enqueuer writes the row first (status `queued`); the job counts
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
export async function recordQueuedActions(db: Db, org: string, entries: readonly AuditEntry[]): Promise<void> {
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
export async function beginAttempt(db: Db, org: string, actionId: string): Promise<ProvisioningActionStatus | undefined> {
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
export async function finishAction(db: Db, org: string, actionId: string, end: ActionEnd): Promise<void> {
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
export async function recordRetryableError(db: Db, org: string, actionId: string, errorCode: string, errorMessage: string): Promise<void> {
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
export async function auditRows(db: Db, org: string, actionIds: readonly string[]): Promise<AuditRow[]> {
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
export async function openActions(db: Db, org: string, employeeIds?: readonly string[]): Promise<AuditRow[]> {
  if (employeeIds?.length === 0) return [];
  let query = db.selectFrom('trainsync.provisioning_actions').select(AUDIT_COLUMNS).where('org', '=', org).where('status', 'in', ['planned', 'queued']);
  if (employeeIds !== undefined) query = query.where('employee_id', 'in', employeeIds);
  const rows = await query.execute();
  return rows.map(toAuditRow);
}

/** Failed and needs-identity actions, newest first: what `status` shows. */
export async function actionsNeedingAttention(db: Db, org: string, limit = 50): Promise<AuditRow[]> {
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

export interface FeedRecord {
  hash: string;
  path: string;
  format: 'csv' | 'jsonl';
  mode: 'full' | 'delta';
  dryRun: boolean;
  rows: number;
  errors: number;
  actions: number;
  refused: string | null;
}

/** Every feed read (dry runs and refusals included) with its hash. */
export async function recordFeed(db: Db, org: string, feed: FeedRecord): Promise<void> {
  await db
    .insertInto('trainsync.feeds')
    .values({
      org,
      hash: feed.hash,
      path: feed.path,
      format: feed.format,
      mode: feed.mode,
      dry_run: feed.dryRun,
      rows: feed.rows,
      errors: feed.errors,
      actions: feed.actions,
      refused: feed.refused,
    })
    .execute();
}
