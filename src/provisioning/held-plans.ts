import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../warehouse/database.ts';
import { withTransaction, type PgLender } from '../warehouse/transaction.ts';
import type { FeedReadResult, FeedRow } from './feed/types.ts';
import { ACTION_KINDS, type Plan, type PlannedAction } from './plan/types.ts';

/**
 * Plans the mass-disable guard refused, kept for review (`trainsync.held_plans`). Only the
 * newest held plan can be approved: a later held plan, or a feed applied since, supersedes it
 * (its actions were planned from an applied state that no longer holds). Per organisation:
 * a plan is one organisation's feed against its applied state, and only that organisation's
 * newer plans or feeds supersede it. Ids are global (bigserial), so a plan is found by id
 * alone; acting on it checks it is the acting organisation's.
 */

type Db = Kysely<Database>;

export type HeldPlanStatus = 'held' | 'approved' | 'rejected' | 'superseded';

export interface HeldPerson {
  employeeId: string;
  email: string;
  kinds: string[];
}

export interface HeldPlanSummary {
  id: number;
  /** The organisation whose feed it is. */
  org: string;
  file: string;
  mode: 'full' | 'delta';
  reason: string;
  message: string;
  disables: number;
  actionCount: number;
  status: HeldPlanStatus;
  decidedBy: string | null;
  decidedRole: string | null;
  decidedAt: Date | null;
  createdAt: Date;
}

/** What approving snapshots into training.employees: the feed's valid rows and the keys of its rejected ones. */
export interface HeldFeed {
  rows: FeedRow[];
  keepEmployeeIds: string[];
  keepEmails: string[];
}

export interface HeldPlan extends HeldPlanSummary {
  feedHash: string;
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
const heldFeedSchema = z.object({
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
const peopleSchema = z.array(z.object({ employeeId: z.string(), email: z.string(), kinds: z.array(z.string()) }));

function peopleOf(plan: Plan): HeldPerson[] {
  return Object.entries(plan.byEmployee).map(([employeeId, actions]) => ({
    employeeId,
    email: actions[0]?.email ?? '',
    kinds: actions.map((a) => a.kind),
  }));
}

/** Stores a refused plan (superseding any older one still held); returns its id. */
export async function holdPlan(lend: PgLender, org: string, plan: Plan, feed: Pick<FeedReadResult, 'hash' | 'rows' | 'invalidEmployeeIds' | 'invalidEmails'> & { file: string }): Promise<number> {
  if (!plan.refused) throw new Error('holdPlan: the plan was not refused');
  const refused = plan.refused;
  const held: HeldFeed = { rows: feed.rows, keepEmployeeIds: [...feed.invalidEmployeeIds], keepEmails: [...feed.invalidEmails] };
  return withTransaction(lend, async ({ db: tx }) => {
    await supersedeHeldPlans(tx, org);
    const row = await sql<{ id: number }>`
      insert into trainsync.held_plans (org, feed_hash, file, mode, reason, message, actions, people, disables, feed)
      values (${org}, ${feed.hash}, ${feed.file}, ${plan.mode}, ${refused.reason}, ${refused.message},
              ${JSON.stringify(plan.actions)}::jsonb, ${JSON.stringify(peopleOf(plan))}::jsonb, ${plan.counts.disable}, ${JSON.stringify(held)}::jsonb)
      returning id`.execute(tx);
    return row.rows[0]!.id;
  });
}

/** A feed of the organisation was applied (or a newer plan held): its older held plans can no longer be approved. */
export async function supersedeHeldPlans(db: Db, org: string): Promise<void> {
  await sql`update trainsync.held_plans set status = 'superseded', decided_at = now() where org = ${org} and status = 'held'`.execute(db);
}

const SUMMARY_COLUMNS = sql`id, org, file, mode, reason, message, disables, jsonb_array_length(actions) as "actionCount", status,
  decided_by as "decidedBy", decided_role as "decidedRole", decided_at as "decidedAt", created_at as "createdAt"`;

/** Held plans, newest first; `onlyHeld` for those waiting on a person; of one organisation when `org` is given (else every organisation's). */
export async function listHeldPlans(db: Db, options: { org?: string; onlyHeld?: boolean; limit?: number } = {}): Promise<HeldPlanSummary[]> {
  const held = options.onlyHeld ? sql`status = 'held'` : sql`true`;
  const ofOrg = options.org === undefined ? sql`true` : sql`org = ${options.org}`;
  const rows = await sql<HeldPlanSummary>`select ${SUMMARY_COLUMNS} from trainsync.held_plans where ${held} and ${ofOrg} order by id desc limit ${options.limit ?? 50}`.execute(db);
  return rows.rows;
}

export async function getHeldPlan(db: Db, id: number): Promise<HeldPlan | undefined> {
  const rows = await sql<HeldPlanSummary & { feedHash: string; actions: unknown; people: unknown; feed: unknown }>`
    select ${SUMMARY_COLUMNS}, feed_hash as "feedHash", actions, people, feed from trainsync.held_plans where id = ${id}`.execute(db);
  const r = rows.rows[0];
  if (!r) return undefined;
  return {
    ...r,
    actions: z.array(plannedActionSchema).parse(r.actions) as PlannedAction[],
    people: peopleSchema.parse(r.people),
    feed: heldFeedSchema.parse(r.feed) as HeldFeed,
  };
}

/** Settles one organisation's held plan; false when it was no longer held (decided, or superseded, meanwhile) or is another organisation's. */
export async function decideHeldPlan(db: Db, org: string, id: number, decision: { status: 'approved' | 'rejected'; by: string; role: string }): Promise<boolean> {
  const result = await sql`
    update trainsync.held_plans set status = ${decision.status}, decided_by = ${decision.by}, decided_role = ${decision.role}, decided_at = now()
     where id = ${id} and org = ${org} and status = 'held'`.execute(db);
  return Number(result.numAffectedRows ?? 0) === 1;
}

/** The plan shape enqueuePlan takes, rebuilt from stored actions (plan order kept). */
export function planOfActions(actions: readonly PlannedAction[]): Pick<Plan, 'actions' | 'byEmployee'> {
  const byEmployee: Record<string, PlannedAction[]> = {};
  for (const action of actions) (byEmployee[action.employeeId] ??= []).push(action);
  return { actions: [...actions], byEmployee };
}
