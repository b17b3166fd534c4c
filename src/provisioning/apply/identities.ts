import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { Database } from '../../warehouse/database.ts';
import type { IdentitiesTable } from '../../warehouse/provisioning-tables.ts';
import type { FeedRole } from '../feed/types.ts';
import type { AppliedEmployee } from '../plan/types.ts';

/**
 * `trainsync.identities`: per employee, the e-mail, the HR employee id and the platform
 * user id kept together, with the state trainsync last made true on the platform.
 * Every write bumps `version` (the planner's action ids include it; see plan-action-id.ts).
 */

type Db = Kysely<Database>;
export type IdentityRow = Selectable<IdentitiesTable>;

export async function findIdentity(db: Db, employeeId: string): Promise<IdentityRow | undefined> {
  return db.selectFrom('trainsync.identities').selectAll().where('employee_id', '=', employeeId).executeTakeFirst();
}

export async function findIdentityByEmail(db: Db, email: string): Promise<IdentityRow | undefined> {
  return db
    .selectFrom('trainsync.identities')
    .selectAll()
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
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
export async function upsertAccountIdentity(db: Db, account: AccountIdentity): Promise<void> {
  await db
    .insertInto('trainsync.identities')
    .values({
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
      oc.column('employee_id').doUpdateSet({
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
export async function releasePlatformUserId(db: Db, platformUserId: string, employeeId: string): Promise<string[]> {
  const rows = await db
    .updateTable('trainsync.identities')
    .set({ platform_user_id: null, version: sql<number>`version + 1`, updated_at: sql<Date>`now()` })
    .where('platform_user_id', '=', platformUserId)
    .where('employee_id', '<>', employeeId)
    .returning('employee_id')
    .execute();
  return rows.map((r) => r.employee_id);
}

/** Identities adopted from the platform's user list before the first plan (see adopt.ts). */
export async function insertAdoptedIdentities(db: Db, employees: readonly AppliedEmployee[]): Promise<number> {
  let inserted = 0;
  for (let i = 0; i < employees.length; i += 500) {
    const chunk = employees.slice(i, i + 500);
    const result = await db
      .insertInto('trainsync.identities')
      .values(
        chunk.map((e) => ({
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
  db: Db,
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
    .where('employee_id', '=', employeeId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** After enable/disable: the access trainsync made true. Returns whether a row was updated. */
export function setIdentityActive(db: Db, employeeId: string, active: boolean, platformUserId: string): Promise<boolean> {
  return updateAppliedState(db, employeeId, platformUserId, { active });
}

/**
 * After a group change: the membership trainsync made true, on the identity and in
 * `training.group_members` (the warehouse's only source of memberships: the platform
 * offers no read of them). Call it in the transaction that finishes the action.
 * Returns whether an identity row was updated.
 */
export async function setIdentityGroup(db: Db, org: string, employeeId: string, groupId: string, member: boolean, platformUserId: string): Promise<boolean> {
  const groups = member
    ? sql<string[]>`case when ${groupId}::uuid = any(groups) then groups else array_append(groups, ${groupId}::uuid) end`
    : sql<string[]>`array_remove(groups, ${groupId}::uuid)`;
  const updated = await updateAppliedState(db, employeeId, platformUserId, { groups });
  await recordGroupMember(db, org, employeeId, groupId, member, platformUserId);
  return updated;
}

/** An add (re)starts the organisation's membership (`since` kept while it lasts); a removal marks it removed, keeping the row. */
async function recordGroupMember(db: Db, org: string, employeeId: string, groupId: string, member: boolean, platformUserId: string): Promise<void> {
  if (member) {
    await db
      .insertInto('training.group_members')
      .values({ org, group_id: groupId, user_id: platformUserId, employee_id: employeeId, since: sql<Date>`now()`, removed_at: null })
      .onConflict((oc) =>
        oc.columns(['org', 'group_id', 'user_id']).doUpdateSet({
          employee_id: (eb) => eb.ref('excluded.employee_id'),
          since: sql<Date>`case when training.group_members.removed_at is null then training.group_members.since else excluded.since end`,
          removed_at: null,
        }),
      )
      .execute();
    return;
  }
  await db
    .updateTable('training.group_members')
    .set({ removed_at: sql<Date>`now()` })
    .where('org', '=', org)
    .where('group_id', '=', groupId)
    .where('user_id', '=', platformUserId)
    .where('removed_at', 'is', null)
    .execute();
}

/**
 * After an account was created again: memberships recorded for the employee's earlier
 * account ended with it (the platform deletes them with the account).
 */
export async function closeMembershipsOfOtherAccounts(db: Db, org: string, employeeId: string, platformUserId: string | null): Promise<void> {
  let query = db
    .updateTable('training.group_members')
    .set({ removed_at: sql<Date>`now()` })
    .where('org', '=', org)
    .where('employee_id', '=', employeeId)
    .where('removed_at', 'is', null);
  if (platformUserId !== null) query = query.where('user_id', '<>', platformUserId);
  await query.execute();
}
