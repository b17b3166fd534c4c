import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../warehouse/database.ts';
import type { FeedRow } from './feed/types.ts';
import type { SourceKind } from './pipeline/types.ts';
import { ACTION_KINDS, type Plan, type PlannedAction } from './plan/types.ts';
import type { OrgDb } from '../warehouse/scope.ts';

/**
 * Held plans (`trainsync.held_plans`): every change a guard held, whichever source made it
 * (an HR feed, a SCIM burst, a drift repair), until a person approves it (`trainsync held
 * --approve`, the console) or rejects it. This module reads and settles them; the pipeline
 * writes them (pipeline/hold.ts). Per organisation: ids are global (bigserial), so a plan is
 * found by id alone; acting on it checks it is the acting organisation's.
 */

type Db = Kysely<Database>;

export type HeldPlanStatus = 'held' | 'approved' | 'rejected' | 'superseded';

export interface HeldPerson {
  employeeId: string;
  email: string;
  kinds: string[];
  /** The HR department (the row's `department` attribute, else the last snapshot's), when known. */
  department?: string | null | undefined;
  /** The source's own key of the person (a SCIM User's id): approving reads the source again by it. */
  ref?: string | undefined;
}

export interface HeldPlanSummary {
  id: number;
  /** The organisation whose change it is. */
  org: string;
  /** Which source made it. */
  source: SourceKind;
  /** The feed's file name, `SCIM`, or `training.employees`. */
  file: string;
  mode: 'full' | 'delta';
  reason: string;
  message: string;
  /** How many people would lose access. */
  disables: number;
  actionCount: number;
  /** Rows the source read (a feed's valid rows, the snapshot's employees, SCIM changes); null for plans held before 0018. */
  rowsRead: number | null;
  /** The organisation's active employees when it was held. */
  activeEmployees: number | null;
  status: HeldPlanStatus;
  decidedBy: string | null;
  decidedRole: string | null;
  decidedAt: Date | null;
  decidedNote: string | null;
  createdAt: Date;
}

/** What approving snapshots into training.employees: the feed's valid rows and the keys of its rejected ones. */
export interface HeldFeed {
  rows: FeedRow[];
  keepEmployeeIds: string[];
  keepEmails: string[];
}

export interface HeldPlan extends HeldPlanSummary {
  /** A feed's sha256 (its actions' audit mark); null for a SCIM burst or a repair. */
  feedHash: string | null;
  actions: PlannedAction[];
  people: HeldPerson[];
  feed: HeldFeed;
}

const actionState = z.record(z.string(), z.union([z.boolean(), z.string()]));
// Loose: fields the planner adds (e.g. a drift repair's reason) survive the round trip.
const plannedActionSchema = z.looseObject({
  id: z.string().min(1),
  kind: z.enum(ACTION_KINDS),
  employeeId: z.string().min(1),
  email: z.string().min(1),
  groupId: z.string().optional(),
  platformUserId: z.string().nullable(),
  seq: z.number().int(),
  baseVersion: z.number().int(),
  before: actionState.nullable(),
  after: actionState,
});
/** Stored actions, as the planner made them. */
export const heldActionsSchema = z.array(plannedActionSchema).transform((actions) => actions as PlannedAction[]);
export const heldFeedSchema = z.object({
  rows: z.array(
    z.object({
      line: z.number(),
      employeeId: z.string(),
      email: z.string(),
      emailDisplay: z.string(),
      firstName: z.string().nullable(),
      lastName: z.string().nullable(),
      status: z.enum(['active', 'inactive']),
      groups: z.array(z.string()),
      role: z.enum(['USER', 'ADMIN']),
      organisationIdentifier: z.string(),
      platformUserId: z.string().optional(),
      attributes: z.record(z.string(), z.json()).optional(),
    }),
  ),
  keepEmployeeIds: z.array(z.string()),
  keepEmails: z.array(z.string()),
});
export const heldPeopleSchema = z.array(
  z.object({ employeeId: z.string(), email: z.string(), kinds: z.array(z.string()), department: z.string().nullable().optional(), ref: z.string().optional() }),
);

const SUMMARY_COLUMNS = sql`id, org, source, file, mode, reason, message, disables, jsonb_array_length(actions) as "actionCount",
  rows_read as "rowsRead", active_employees as "activeEmployees", status,
  decided_by as "decidedBy", decided_role as "decidedRole", decided_at as "decidedAt", decided_note as "decidedNote", created_at as "createdAt"`;

/** The held plans of the organisation of `scope`, newest first; `onlyHeld` for those waiting on a person. */
export async function listHeldPlans({ db, org }: OrgDb, options: { onlyHeld?: boolean; limit?: number } = {}): Promise<HeldPlanSummary[]> {
  const held = options.onlyHeld ? sql`status = 'held'` : sql`true`;
  const rows = await sql<HeldPlanSummary>`select ${SUMMARY_COLUMNS} from trainsync.held_plans where ${held} and org = ${org} order by id desc limit ${options.limit ?? 50}`.execute(db);
  return rows.rows;
}

export async function getHeldPlan(db: Db, id: number): Promise<HeldPlan | undefined> {
  const rows = await sql<HeldPlanSummary & { feedHash: string | null; actions: unknown; people: unknown; feed: unknown }>`
    select ${SUMMARY_COLUMNS}, feed_hash as "feedHash", actions, people, feed from trainsync.held_plans where id = ${id}`.execute(db);
  const r = rows.rows[0];
  if (!r) return undefined;
  return {
    ...r,
    actions: heldActionsSchema.parse(r.actions),
    people: heldPeopleSchema.parse(r.people),
    feed: heldFeedSchema.parse(r.feed) as HeldFeed,
  };
}

/** Settles one organisation's held plan; false when it was no longer held (decided, or superseded, meanwhile) or is another organisation's. */
export async function decideHeldPlan({ db, org }: OrgDb, id: number, decision: { status: 'approved' | 'rejected'; by: string; role: string; note?: string | undefined }): Promise<boolean> {
  const result = await sql`
    update trainsync.held_plans set status = ${decision.status}, decided_by = ${decision.by}, decided_role = ${decision.role}, decided_note = ${decision.note ?? null}, decided_at = now()
     where id = ${id} and org = ${org} and status = 'held'`.execute(db);
  return Number(result.numAffectedRows ?? 0) === 1;
}

/** The plan shape enqueuePlan takes, rebuilt from stored actions (plan order kept). */
export function planOfActions(actions: readonly PlannedAction[]): Pick<Plan, 'actions' | 'byEmployee'> {
  const byEmployee: Record<string, PlannedAction[]> = {};
  for (const action of actions) (byEmployee[action.employeeId] ??= []).push(action);
  return { actions: [...actions], byEmployee };
}

/** Per organisation: the plans waiting on a person and how many people they would take access from (`status`). */
export async function heldPlanCounts({ db, org }: OrgDb): Promise<{ plans: number; disables: number; oldest: Date | null }> {
  const { rows } = await sql<{ plans: number; disables: number; oldest: Date | null }>`
    select count(*)::int as plans, coalesce(sum(disables), 0)::int as disables, min(created_at) as oldest
      from trainsync.held_plans where org = ${org} and status = 'held'`.execute(db);
  return rows[0] ?? { plans: 0, disables: 0, oldest: null };
}

/** How many plans of each organisation of `orgs` wait on a person, by slug; those with none are absent. One statement (`status` over many organisations). */
export async function heldPlanCountsOf(db: Db, orgs: readonly string[]): Promise<Map<string, number>> {
  if (orgs.length === 0) return new Map();
  const { rows } = await sql<{ org: string; n: number }>`
    select org, count(*)::int as n from trainsync.held_plans where org = any(${[...orgs]}::text[]) and status = 'held' group by org`.execute(db);
  return new Map(rows.map((r) => [r.org, r.n]));
}

/** A held plan as `status` lists it, with how many its organisation has held in all. */
export interface HeldPlanLine {
  org: string;
  id: number;
  source: string;
  file: string;
  disables: number;
  actions: number;
  created_at: Date;
  /** The organisation's held plans in all (`perOrg` at most are listed). */
  total: number;
}

/** The newest `perOrg` held plans of each organisation of `orgs`, by organisation, newest first: one statement for all (`status`). */
export async function heldPlansOf(db: Db, orgs: readonly string[], perOrg: number): Promise<HeldPlanLine[]> {
  if (orgs.length === 0) return [];
  const { rows } = await sql<HeldPlanLine>`
    select org, id, source, file, disables, actions, created_at, total from (
      select h.org, h.id, h.source, h.file, h.disables, jsonb_array_length(h.actions) as actions, h.created_at,
        row_number() over (partition by h.org order by h.id desc) as n, count(*) over (partition by h.org)::int as total
      from trainsync.held_plans h where h.org = any(${[...orgs]}::text[]) and h.status = 'held'
    ) x where n <= ${perOrg} order by org, id desc`.execute(db);
  return rows;
}

/** Per organisation of `orgs` with plans waiting on a person: how many, and when the oldest was held. One statement (the metrics, at each scrape). */
export async function heldPlanAgesOf(db: Db, orgs: readonly string[]): Promise<Array<{ org: string; plans: number; oldest: Date }>> {
  if (orgs.length === 0) return [];
  const { rows } = await sql<{ org: string; plans: number; oldest: Date }>`
    select org, count(*)::int as plans, min(created_at) as oldest from trainsync.held_plans
     where org = any(${[...orgs]}::text[]) and status = 'held' group by org order by org`.execute(db);
  return rows;
}
