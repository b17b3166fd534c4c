import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { IdentitiesTable } from './tables.ts';
import type { FeedRole } from '../feed/types.ts';
import type { AppliedEmployee } from '../plan/types.ts';
import type { OrgDb } from '../../warehouse/scope.ts';

/**
 * The store of `trainsync.identities`: per employee, the e-mail, the HR employee id and the
 * platform user id kept together, with the state trainsync last made true on the platform.
 * Every write bumps `version` (the planner's action ids include it; see plan-action-id.ts).
 * Every statement that names the table is here (test/table-owners.test.ts keeps it so);
 * other wings and the commands call these functions with their scoped handle.
 * Per organisation: every function takes the organisation's handle (OrgDb) and reads or writes its rows only
 * (an employee id, an e-mail and a platform user id are unique within one organisation).
 */

export type IdentityRow = Selectable<IdentitiesTable>;

export async function findIdentity({ db, org }: OrgDb, employeeId: string): Promise<IdentityRow | undefined> {
  return db.selectFrom('trainsync.identities').selectAll().where('org', '=', org).where('employee_id', '=', employeeId).executeTakeFirst();
}

export async function findIdentityByEmail({ db, org }: OrgDb, email: string): Promise<IdentityRow | undefined> {
  return db
    .selectFrom('trainsync.identities')
    .selectAll()
    .where('org', '=', org)
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

/** Every identity of the organisation, by employee id: the planner's applied state. */
export async function allIdentities({ db, org }: OrgDb): Promise<IdentityRow[]> {
  return db.selectFrom('trainsync.identities').selectAll().where('org', '=', org).orderBy('employee_id').execute();
}

/** The identities of the given employees, or holding one of the given e-mails (lower case). */
export async function identitiesOf({ db, org }: OrgDb, employeeIds: readonly string[], emails: readonly string[] = []): Promise<IdentityRow[]> {
  if (employeeIds.length === 0 && emails.length === 0) return [];
  return db
    .selectFrom('trainsync.identities')
    .selectAll()
    .where('org', '=', org)
    .where((eb) =>
      eb.or([
        ...(employeeIds.length > 0 ? [eb('employee_id', 'in', employeeIds)] : []),
        ...(emails.length > 0 ? [eb(sql<string>`lower(email)`, 'in', emails)] : []),
      ]),
    )
    .execute();
}

/** How many identities the organisation has, and how many of them trainsync last made active. */
export async function countIdentities({ db, org }: OrgDb): Promise<{ accounts: number; active: number }> {
  return db
    .selectFrom('trainsync.identities')
    .select([sql<number>`count(*)::int`.as('accounts'), sql<number>`count(*) filter (where active)::int`.as('active')])
    .where('org', '=', org)
    .executeTakeFirstOrThrow();
}

/**
 * The active employees trainsync knows for one organisation: those it last applied as active
 * (trainsync.identities) and those the last HR snapshot lists as active (training.employees,
 * not removed), each counted once. The base of the feed-shrink guard: a full feed leaves
 * every one of them it does not list without access (the first) or removed (the second).
 */
export async function countKnownActive({ db, org }: OrgDb): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from (
      select employee_id from trainsync.identities where org = ${org} and active
      union
      select employee_id from training.employees where org = ${org} and status = 'active' and removed_at is null
    ) known`.execute(db);
  return rows[0]?.n ?? 0;
}

/**
 * The last snapshot as a statement of the workforce, for the feed-shrink guard of
 * `reconcile --fix`: the employees it lists (not removed), and the removed ones whose identity
 * is still active (each a leaver by absence, whom the repair would disable).
 */
export async function snapshotShrinkCounts({ db, org }: OrgDb): Promise<{ listed: number; absentActive: number }> {
  const { rows } = await sql<{ listed: number; absent_active: number }>`
    select count(*) filter (where e.removed_at is null)::int as listed,
           count(*) filter (where e.removed_at is not null and i.active)::int as absent_active
      from training.employees e
      left join trainsync.identities i on i.org = e.org and i.employee_id = e.employee_id
     where e.org = ${org}`.execute(db);
  return { listed: rows[0]?.listed ?? 0, absentActive: rows[0]?.absent_active ?? 0 };
}

/**
 * When trainsync last wrote an identity of the organisation (null: never), as a subquery for
 * a statement of another table: compared in the database, at Postgres's microseconds.
 */
export function lastIdentityWriteSql({ org }: OrgDb): RawBuilder<Date | null> {
  return sql<Date | null>`(select max(i.updated_at) from trainsync.identities i where i.org = ${org})`;
}

/** A snapshot employee (training.employees) that has an identity, with what only the identity keeps. */
export interface SnapshotIdentityRow {
  employee_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  status: 'active' | 'inactive';
  removed_at: Date | null;
  identity_email: string;
  groups: string[];
  role: FeedRole | null;
  organisation_identifier: string | null;
}

/** One organisation's snapshot employees that have an identity, by employee id (`reconcile --fix`). */
export async function snapshotWithIdentities({ db, org }: OrgDb): Promise<SnapshotIdentityRow[]> {
  const { rows } = await sql<SnapshotIdentityRow>`
    select e.employee_id, e.email, e.first_name, e.last_name, e.status, e.removed_at,
           i.email as identity_email, i.groups::text[] as groups, i.role, i.organisation_identifier
      from training.employees e
      join trainsync.identities i on i.org = e.org and i.employee_id = e.employee_id
     where e.org = ${org}
     order by e.employee_id`.execute(db);
  return rows;
}

/**
 * The groups an employee's identity holds, as a subquery for a statement of another table
 * (a SCIM User inserted starts from them, in the same statement); '{}' without an identity.
 */
export function identityGroupsSql({ org }: OrgDb, employeeId: string): RawBuilder<string[]> {
  return sql<string[]>`coalesce((select i.groups from trainsync.identities i where i.org = ${org} and i.employee_id = ${employeeId}), '{}')`;
}

/** The employees whose identity has no platform id yet, as a subquery for a statement of another table. */
export function employeesWithoutAccountSql({ org }: OrgDb): RawBuilder<string> {
  return sql<string>`(select i.employee_id from trainsync.identities i where i.org = ${org} and i.platform_user_id is null)`;
}

/**
 * A platform id learned for an identity that had none (a SCIM create's, looked up later):
 * set only while no other identity of the organisation holds it (the unique index).
 */
export async function learnPlatformUserId({ db, org }: OrgDb, employeeId: string, platformUserId: string): Promise<void> {
  await db
    .updateTable('trainsync.identities')
    .set({ platform_user_id: platformUserId, updated_at: sql<Date>`now()` })
    .where('org', '=', org)
    .where('employee_id', '=', employeeId)
    .where('platform_user_id', 'is', null)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('trainsync.identities as other').select('other.employee_id').where('other.org', '=', org).where('other.platform_user_id', '=', platformUserId))))
    .execute();
}

export interface AccountIdentity {
  employeeId: string;
  email: string;
  platformUserId: string | null;
  firstName: string | null;
  lastName: string | null;
  role: FeedRole | null;
  organisationIdentifier: string | null;
  active: boolean;
  /** An account created again after a deletion outside trainsync: the recorded groups died with the old one. */
  resetGroups?: boolean;
}

/**
 * Records an account that now exists on the platform (created or adopted). An existing
 * row for the employee is overwritten except its groups (unless `resetGroups`), and
 * keeps a known platform id when this call learned none.
 */
export async function upsertAccountIdentity({ db, org }: OrgDb, account: AccountIdentity): Promise<void> {
  await db
    .insertInto('trainsync.identities')
    .values({
      org,
      employee_id: account.employeeId,
      email: account.email,
      platform_user_id: account.platformUserId,
      first_name: account.firstName,
      last_name: account.lastName,
      role: account.role,
      organisation_identifier: account.organisationIdentifier,
      active: account.active,
      groups: [],
      version: 1,
    })
    .onConflict((oc) =>
      oc.columns(['org', 'employee_id']).doUpdateSet({
        email: (eb) => eb.ref('excluded.email'),
        platform_user_id: sql<string | null>`coalesce(excluded.platform_user_id, trainsync.identities.platform_user_id)`,
        first_name: (eb) => eb.ref('excluded.first_name'),
        last_name: (eb) => eb.ref('excluded.last_name'),
        role: (eb) => eb.ref('excluded.role'),
        organisation_identifier: (eb) => eb.ref('excluded.organisation_identifier'),
        active: (eb) => eb.ref('excluded.active'),
        ...(account.resetGroups ? { groups: sql<string[]>`'{}'::uuid[]` } : {}),
        version: sql<number>`trainsync.identities.version + 1`,
        updated_at: sql<Date>`now()`,
      }),
    )
    .execute();
}

/**
 * The platform just said `platformUserId` is this employee's account: another identity
 * still holding that id records an account that is gone (deleted, and the id handed out
 * again). Its id is cleared, so the unique index lets this one take it; that employee's
 * next action looks its account up again. Returns the employees cleared.
 */
export async function releasePlatformUserId({ db, org }: OrgDb, platformUserId: string, employeeId: string): Promise<string[]> {
  const rows = await db
    .updateTable('trainsync.identities')
    .set({ platform_user_id: null, version: sql<number>`version + 1`, updated_at: sql<Date>`now()` })
    .where('org', '=', org)
    .where('platform_user_id', '=', platformUserId)
    .where('employee_id', '<>', employeeId)
    .returning('employee_id')
    .execute();
  return rows.map((r) => r.employee_id);
}

/** Identities adopted from the platform's user list before the first plan (see adopt.ts). */
export async function insertAdoptedIdentities({ db, org }: OrgDb, employees: readonly AppliedEmployee[]): Promise<number> {
  let inserted = 0;
  for (let i = 0; i < employees.length; i += 500) {
    const chunk = employees.slice(i, i + 500);
    const result = await db
      .insertInto('trainsync.identities')
      .values(
        chunk.map((e) => ({
          org,
          employee_id: e.employeeId,
          email: e.email,
          platform_user_id: e.platformUserId,
          first_name: e.firstName,
          last_name: e.lastName,
          role: e.role ?? null,
          organisation_identifier: e.organisationIdentifier ?? null,
          active: e.active,
          groups: e.groups,
          version: 1,
        })),
      )
      // A row that appeared meanwhile (another run) wins: adoption never overwrites.
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? 0n);
  }
  return inserted;
}

/**
 * Records what an action made true on the platform: bumps `version` (so a later,
 * opposite action gets a new action id) and fills in the platform id if it was unknown.
 */
async function updateAppliedState(
  { db, org }: OrgDb,
  employeeId: string,
  platformUserId: string,
  change: { active: boolean } | { groups: RawBuilder<string[]> },
): Promise<boolean> {
  const result = await db
    .updateTable('trainsync.identities')
    .set({
      ...change,
      platform_user_id: sql<string>`coalesce(platform_user_id, ${platformUserId}::uuid)`,
      version: sql<number>`version + 1`,
      updated_at: sql<Date>`now()`,
    })
    .where('org', '=', org)
    .where('employee_id', '=', employeeId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** After enable/disable: the access trainsync made true. Returns whether a row was updated. */
export function setIdentityActive(scope: OrgDb, employeeId: string, active: boolean, platformUserId: string): Promise<boolean> {
  return updateAppliedState(scope, employeeId, platformUserId, { active });
}

/**
 * After a group change: the membership trainsync made true, on the identity and in
 * `training.group_members` (the warehouse's only source of memberships: the platform
 * offers no read of them). Call it in the transaction that finishes the action.
 * Returns whether an identity row was updated.
 */
export async function setIdentityGroup(scope: OrgDb, employeeId: string, groupId: string, member: boolean, platformUserId: string): Promise<boolean> {
  const groups = member
    ? sql<string[]>`case when ${groupId}::uuid = any(groups) then groups else array_append(groups, ${groupId}::uuid) end`
    : sql<string[]>`array_remove(groups, ${groupId}::uuid)`;
  const updated = await updateAppliedState(scope, employeeId, platformUserId, { groups });
  await recordGroupMember(scope, employeeId, groupId, member, platformUserId);
  return updated;
}

/**
 * An add (re)starts the membership (`since` kept while it lasts); a removal marks it removed, keeping the row.
 * Raw SQL: the upsert on its key (org, group_id, user_id) keeps `since` in one statement (its row type: ./tables.ts).
 */
async function recordGroupMember({ db, org }: OrgDb, employeeId: string, groupId: string, member: boolean, platformUserId: string): Promise<void> {
  if (member) {
    await sql`
      insert into training.group_members (org, group_id, user_id, employee_id, since, removed_at)
      values (${org}, ${groupId}::uuid, ${platformUserId}::uuid, ${employeeId}, now(), null)
      on conflict (org, group_id, user_id) do update set
        employee_id = excluded.employee_id,
        since = case when training.group_members.removed_at is null then training.group_members.since else excluded.since end,
        removed_at = null`.execute(db);
    return;
  }
  await sql`
    update training.group_members set removed_at = now()
     where org = ${org} and group_id = ${groupId}::uuid and user_id = ${platformUserId}::uuid and removed_at is null`.execute(db);
}

/**
 * After an account was created again: memberships recorded for the employee's earlier
 * account ended with it (the platform deletes them with the account).
 */
export async function closeMembershipsOfOtherAccounts({ db, org }: OrgDb, employeeId: string, platformUserId: string | null): Promise<void> {
  await sql`
    update training.group_members set removed_at = now()
     where org = ${org} and employee_id = ${employeeId} and removed_at is null
       and (${platformUserId}::uuid is null or user_id <> ${platformUserId}::uuid)`.execute(db);
}
