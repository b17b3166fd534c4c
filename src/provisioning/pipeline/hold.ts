import { sql, type Kysely } from 'kysely';
import type { Database } from '../../warehouse/database.ts';
import type { FeedRow } from '../feed/types.ts';
import { heldActionsSchema, heldFeedSchema, heldPeopleSchema, type HeldFeed, type HeldPerson } from '../held-plans.ts';
import type { Plan, PlannedAction } from '../plan/types.ts';
import type { DesiredState, Source, SourceKind } from './types.ts';
import type { OrgDb, OrgScope } from '../../warehouse/scope.ts';

/**
 * The one hold: whatever the source, a held change is a row of `trainsync.held_plans`
 * saying which source held it and why (rows read, active employees, how many would lose
 * access), with its actions as planned, the people they touch and the desired rows.
 *
 * A plan held whole (a feed, a repair) is one statement: a newer one of the same or a
 * stronger source supersedes it (SUPERSEDES). An excess hold (SCIM) collects a burst: the
 * disables it holds join the organisation's open plan of that source, and a person whom a
 * newer applied statement says is active leaves it (their disable is moot).
 */

type Db = Kysely<Database>;

/** The held plans an applied or newly held plan of each source makes moot: a feed is newer than a held feed or repair; a repair than a held repair. */
export const SUPERSEDES: Readonly<Record<SourceKind, readonly SourceKind[]>> = { feed: ['feed', 'reconcile'], reconcile: ['reconcile'], scim: [] };

export interface HoldInput {
  source: Pick<Source<unknown>, 'kind' | 'label' | 'auditMark' | 'guard'>;
  plan: Plan;
  desired: DesiredState;
  /** The employees whose actions are held. */
  held: readonly string[];
  /** Why: the refusal's message, or the excess hold's reason. */
  message: string;
  /** The organisation's active employees. */
  activeCount: number;
  /** The source's key of each person, when it has one (a SCIM User's id). */
  refs?: ReadonlyMap<string, string> | undefined;
}

/** The HR department of each person: their row's `department` attribute, else the last snapshot's. */
async function departmentsOf({ db, org }: OrgDb, employeeIds: readonly string[], rows: ReadonlyMap<string, FeedRow>): Promise<Map<string, string | null>> {
  const found = new Map<string, string | null>();
  const missing: string[] = [];
  for (const id of employeeIds) {
    const value = rows.get(id)?.attributes?.department;
    if (value === undefined || value === null) missing.push(id);
    else found.set(id, String(value));
  }
  if (missing.length > 0) {
    const { rows: snapshot } = await sql<{ employee_id: string; department: string | null }>`
      select employee_id, attributes ->> 'department' as department from training.employees where org = ${org} and employee_id = any(${missing}::text[])`.execute(db);
    for (const r of snapshot) found.set(r.employee_id, r.department);
  }
  return found;
}

async function heldParts(scope: OrgDb, input: HoldInput): Promise<{ actions: PlannedAction[]; people: HeldPerson[]; feed: HeldFeed }> {
  const held = new Set(input.held);
  const rows = new Map(input.desired.rows.map((r) => [r.employeeId, r]));
  const actions = input.plan.actions.filter((a) => held.has(a.employeeId));
  const employees = [...new Set(actions.map((a) => a.employeeId))];
  const departments = await departmentsOf(scope, employees, rows);
  const people = employees.map((employeeId): HeldPerson => {
    const mine = input.plan.byEmployee[employeeId] ?? [];
    const ref = input.refs?.get(employeeId);
    return { employeeId, email: mine[0]?.email ?? '', kinds: mine.map((a) => a.kind), department: departments.get(employeeId) ?? null, ...(ref ? { ref } : {}) };
  });
  const whole = input.source.guard.holds === 'plan';
  const feed: HeldFeed = {
    rows: whole ? [...input.desired.rows] : input.desired.rows.filter((r) => held.has(r.employeeId)),
    keepEmployeeIds: whole ? [...input.desired.invalidEmployeeIds] : [],
    keepEmails: whole ? [...input.desired.invalidEmails] : [],
  };
  return { actions, people, feed };
}

/** Stores a held change; returns its plan's id. Runs under the provisioning lock. */
export async function holdChange(scope: OrgScope, input: HoldInput): Promise<number> {
  return scope.transaction(async (tx) => {
    const { db, org } = tx;
    const parts = await heldParts(tx, input);
    const disables = parts.actions.filter((a) => a.kind === 'disable').length;
    if (input.source.guard.holds === 'excess') {
      const open = await sql<{ id: number; actions: unknown; people: unknown; feed: unknown }>`
        select id, actions, people, feed from trainsync.held_plans where org = ${org} and source = ${input.source.kind} and status = 'held' for update`.execute(db);
      const row = open.rows[0];
      if (row) return appendHeld(db, row, parts, input);
    } else {
      await supersede(tx, SUPERSEDES[input.source.kind]);
    }
    // Only a feed has a file hash (the column holds sha256 hex); a SCIM burst or a repair has none.
    const feedHash = input.source.kind === 'feed' ? input.source.auditMark : null;
    const inserted = await sql<{ id: number }>`
      insert into trainsync.held_plans (org, source, feed_hash, file, mode, reason, message, actions, people, disables, feed, rows_read, active_employees)
      values (${org}, ${input.source.kind}, ${feedHash}, ${input.source.label}, ${input.desired.mode}, 'max-disable', ${input.message},
              ${JSON.stringify(parts.actions)}::jsonb, ${JSON.stringify(parts.people)}::jsonb, ${disables}, ${JSON.stringify(parts.feed)}::jsonb,
              ${input.desired.rows.length}, ${input.activeCount})
      returning id`.execute(db);
    return inserted.rows[0]!.id;
  });
}

/** A burst's later batch: its held people join the open plan (each once), and the counts grow. */
async function appendHeld(db: Db, row: { id: number; actions: unknown; people: unknown; feed: unknown }, parts: Awaited<ReturnType<typeof heldParts>>, input: HoldInput): Promise<number> {
  const people: HeldPerson[] = heldPeopleSchema.parse(row.people);
  const known = new Set(people.map((p) => p.employeeId));
  const fresh = (employeeId: string): boolean => !known.has(employeeId);
  const actions = [...heldActionsSchema.parse(row.actions), ...parts.actions.filter((a) => fresh(a.employeeId))];
  const feed = heldFeedSchema.parse(row.feed);
  const merged: HeldFeed = { ...feed, rows: [...feed.rows, ...parts.feed.rows.filter((r) => fresh(r.employeeId))] };
  const allPeople = [...people, ...parts.people.filter((p) => fresh(p.employeeId))];
  await sql`
    update trainsync.held_plans
       set actions = ${JSON.stringify(actions)}::jsonb, people = ${JSON.stringify(allPeople)}::jsonb, feed = ${JSON.stringify(merged)}::jsonb,
           disables = ${actions.filter((a) => a.kind === 'disable').length}, message = ${input.message},
           rows_read = coalesce(rows_read, 0) + ${input.desired.rows.length}, active_employees = ${input.activeCount}
     where id = ${row.id}`.execute(db);
  return row.id;
}

/** Supersedes the organisation's held plans of the given sources (but `keep`, a plan being approved). */
export async function supersede({ db, org }: OrgDb, sources: readonly SourceKind[], keep?: number): Promise<void> {
  if (sources.length === 0) return;
  await sql`update trainsync.held_plans set status = 'superseded', decided_at = now()
             where org = ${org} and status = 'held' and source = any(${sources}::text[]) and id <> ${keep ?? 0}`.execute(db);
}

/**
 * People a newer applied statement says are active leave the open excess holds: their held
 * disable is moot. A plan left with nobody is superseded.
 */
export async function releaseActive({ db, org }: OrgDb, activeEmployeeIds: readonly string[], keep?: number): Promise<void> {
  if (activeEmployeeIds.length === 0) return;
  const { rows } = await sql<{ id: number; actions: unknown; people: unknown; feed: unknown }>`
    select id, actions, people, feed from trainsync.held_plans
     where org = ${org} and status = 'held' and source = 'scim' and id <> ${keep ?? 0}
       and exists (select 1 from jsonb_array_elements(people) p where p ->> 'employeeId' = any(${[...activeEmployeeIds]}::text[]))
       for update`.execute(db);
  const active = new Set(activeEmployeeIds);
  for (const row of rows) {
    const people = heldPeopleSchema.parse(row.people).filter((p) => !active.has(p.employeeId));
    const actions = heldActionsSchema.parse(row.actions).filter((a) => !active.has(a.employeeId));
    const feed = heldFeedSchema.parse(row.feed);
    if (people.length === 0) {
      await sql`update trainsync.held_plans set status = 'superseded', decided_at = now() where id = ${row.id}`.execute(db);
      continue;
    }
    await sql`
      update trainsync.held_plans
         set people = ${JSON.stringify(people)}::jsonb, actions = ${JSON.stringify(actions)}::jsonb,
             feed = ${JSON.stringify({ ...feed, rows: feed.rows.filter((r) => !active.has(r.employeeId)) })}::jsonb,
             disables = ${actions.filter((a) => a.kind === 'disable').length}
       where id = ${row.id}`.execute(db);
  }
}

/** The employees an open excess hold of the source holds already (an identity provider retrying is held once). */
export async function openHeldEmployees({ db, org }: OrgDb, kind: SourceKind, among: readonly string[]): Promise<Set<string>> {
  if (among.length === 0) return new Set();
  const { rows } = await sql<{ employee_id: string }>`
    select p ->> 'employeeId' as employee_id
      from trainsync.held_plans h, jsonb_array_elements(h.people) p
     where h.org = ${org} and h.source = ${kind} and h.status = 'held' and p ->> 'employeeId' = any(${[...among]}::text[])`.execute(db);
  return new Set(rows.map((r) => r.employee_id));
}
