import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import { findIdentityByEmail, identityGroupsSql } from '../provisioning/index.ts';
import type { Database } from '../warehouse/database.ts';
import { conflict, notFound, type ScimError } from './errors.ts';
import type { Equality } from './filter.ts';
import type { ScimUsersTable } from './tables.ts';
import { accountEmail, mintedEmployeeId, namedEmployeeId, type ScimUserResource } from './user-mapping.ts';
import type { OrgDb } from '../warehouse/scope.ts';

/**
 * The store of `trainsync.scim_users`: the Users as the identity providers stated them (deleted
 * ones are invisible to the lookups). Every statement that names the table is here
 * (test/table-owners.test.ts keeps it so): batches, groups and held plans call these functions.
 * Every function takes the handle (OrgDb) of the organisation whose SCIM path and token the request came by, and
 * sees only its Users: another organisation's User is a 404, its userName no conflict.
 */

type Db = Kysely<Database> | Transaction<Database>;
export type ScimUserRow = Selectable<ScimUsersTable>;

function live({ db, org }: OrgDb) {
  return db.selectFrom('trainsync.scim_users').selectAll().where('org', '=', org).where('deleted_at', 'is', null);
}

export async function findUser(scope: OrgDb, scimId: string, forUpdate = false): Promise<ScimUserRow> {
  if (!/^[0-9a-f-]{36}$/i.test(scimId)) throw notFound(`no User ${scimId}`);
  let query = live(scope).where('scim_id', '=', scimId.toLowerCase());
  if (forUpdate) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  if (!row) throw notFound(`no User ${scimId}`);
  return row;
}

export async function findUsersByIds(scope: OrgDb, scimIds: readonly string[]): Promise<ScimUserRow[]> {
  if (scimIds.length === 0) return [];
  return live(scope).where('scim_id', 'in', scimIds).execute();
}

export async function listUsers(scope: OrgDb, filter: readonly Equality[], page: { startIndex: number; count: number }): Promise<{ total: number; rows: ScimUserRow[] }> {
  let query = live(scope);
  for (const { attribute, value } of filter) {
    if (attribute === 'userName') query = query.where(sql<string>`lower(user_name)`, '=', value.toLowerCase());
    else if (attribute === 'externalId') query = query.where('external_id', '=', value);
    else if (attribute === 'id') query = query.where(sql<string>`scim_id::text`, '=', value.toLowerCase());
    else if (attribute === 'displayName') query = query.where(sql<string>`lower(resource->>'displayName')`, '=', value.toLowerCase());
  }
  const [{ total }] = [await query.clearSelect().select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()];
  const rows = page.count === 0 ? [] : await query.orderBy('created_at').orderBy('scim_id').offset(page.startIndex - 1).limit(page.count).execute();
  return { total, rows };
}

/** A new User's employee id, and the live User that states the same HR id when it could not be linked by it. */
export interface EmployeeIdChoice {
  employeeId: string;
  /** The externalId / employeeNumber the User names, when another live User states it too. */
  shared?: { named: string; with: Pick<ScimUserRow, 'scim_id' | 'user_name'> };
}

/**
 * The employee ids of new Users arriving together (one query for the HR ids they state):
 * the HR id a User names (externalId, else employeeNumber) when no other live User of the
 * organisation states it, nor one earlier in the batch. externalId is not unique in SCIM (RFC
 * 7643 §3.1): a User whose HR id another live User states is not linked by it (the first one
 * keeps it) and is keyed as a User naming none: the employee known with its e-mail that no
 * live User holds (a returner whose User was deleted), else one minted from the SCIM id.
 */
export async function employeeIdsFor(scope: OrgDb, users: readonly { scimId: string; user: ScimUserResource }[]): Promise<EmployeeIdChoice[]> {
  const named = users.map(({ user }) => namedEmployeeId(user));
  const wanted = [...new Set(named.filter((n): n is string => n !== undefined))];
  const holders = wanted.length === 0
    ? []
    : await live(scope).clearSelect().select(['scim_id', 'user_name', 'employee_id', 'external_id'])
      .where((eb) => eb.or([eb('employee_id', 'in', wanted), eb('external_id', 'in', wanted)]))
      .orderBy('created_at')
      .execute();
  const stating = new Map<string, Pick<ScimUserRow, 'scim_id' | 'user_name'>>();
  for (const h of holders) {
    for (const key of [h.employee_id, h.external_id]) if (key !== null && !stating.has(key)) stating.set(key, { scim_id: h.scim_id, user_name: h.user_name });
  }
  // In arrival order: each claim is made before any await, so an earlier User of the batch wins.
  return Promise.all(users.map(async ({ scimId, user }, i) => {
    const n = named[i];
    if (n === undefined) return { employeeId: await employeeByEmail(scope, user, scimId, false) };
    const other = stating.get(n);
    if (other === undefined) {
      stating.set(n, { scim_id: scimId, user_name: user.userName });
      return { employeeId: n };
    }
    return { employeeId: await employeeByEmail(scope, user, scimId, true), shared: { named: n, with: other } };
  }));
}

/** A User's employee by its e-mail, else minted; `unlinked`: never another live User's employee. */
async function employeeByEmail(scope: OrgDb, user: ScimUserResource, scimId: string, unlinked: boolean): Promise<string> {
  const { db, org } = scope;
  const email = accountEmail(user).toLowerCase();
  // Not linked by its HR id: nor to another live User's employee by its e-mail (the collections' Users share both).
  const free = async (employeeId: string) => !unlinked || (await live(scope).where('employee_id', '=', employeeId).executeTakeFirst()) === undefined;
  // An e-mail names at most one identity of the organisation (its unique index).
  const identity = await findIdentityByEmail(scope, email);
  if (identity !== undefined && (await free(identity.employee_id))) return identity.employee_id;
  const employee = await db
    .selectFrom('training.employees')
    .select('employee_id')
    .where('org', '=', org)
    .where('email', '=', email)
    .where(
      unlinked
        ? sql<boolean>`not exists (select 1 from trainsync.scim_users u where u.org = ${org} and u.deleted_at is null and u.employee_id = training.employees.employee_id)`
        : sql<boolean>`true`,
    )
    .orderBy('updated_at', 'desc')
    .executeTakeFirst();
  return employee?.employee_id ?? mintedEmployeeId(scimId);
}

/** A User to create: its id and employee id chosen before the batch that inserts it. */
export interface NewUser {
  scimId: string;
  employeeId: string;
  user: ScimUserResource;
}

/**
 * Inserts new Users (pending) in one statement; each gets its row, or a 409 when its
 * userName or employee id is taken by another live User (one earlier in the same batch included).
 */
export async function insertUsers(scope: OrgDb, users: readonly NewUser[]): Promise<Map<string, ScimUserRow | ScimError>> {
  const { db, org } = scope;
  const outcome = new Map<string, ScimUserRow | ScimError>();
  if (users.length === 0) return outcome;
  const rows = await db
    .insertInto('trainsync.scim_users')
    .values(
      users.map(({ scimId, employeeId, user }) => ({
        scim_id: scimId,
        org,
        employee_id: employeeId,
        user_name: user.userName,
        external_id: typeof user.externalId === 'string' ? user.externalId : null,
        active: user.active,
        resource: JSON.stringify(user),
        // An employee provisioned before (a feed): SCIM starts from the groups it has.
        groups: identityGroupsSql(scope, employeeId),
      })),
    )
    // Any unique index: a taken userName or employee id is answered below, row by row (rare).
    .onConflict((oc) => oc.doNothing())
    .returningAll()
    .execute();
  for (const row of rows) outcome.set(row.scim_id, row);
  for (const { scimId, employeeId, user } of users) {
    if (outcome.has(scimId)) continue;
    const taken = await live(scope)
      .where((eb) => eb.or([eb(sql<string>`lower(user_name)`, '=', user.userName.toLowerCase()), eb('employee_id', '=', employeeId)]))
      .executeTakeFirst();
    outcome.set(scimId, taken ? takenError(taken, user, employeeId) : conflict(`userName ${user.userName} or employee ${employeeId} was taken by another request at the same time`));
  }
  return outcome;
}

function takenError(taken: ScimUserRow, user: ScimUserResource, employeeId: string) {
  return taken.user_name.toLowerCase() === user.userName.toLowerCase()
    ? conflict(`userName ${user.userName} already exists (id ${taken.scim_id})`)
    : conflict(`employee ${employeeId} (externalId/employeeNumber) already belongs to User ${taken.scim_id} (${taken.user_name})`);
}

/** Another live User with this userName: 409. */
export async function checkUserNameFree(scope: OrgDb, userName: string, scimId: string): Promise<void> {
  const taken = await live(scope).where(sql<string>`lower(user_name)`, '=', userName.toLowerCase()).where('scim_id', '<>', scimId).executeTakeFirst();
  if (taken) throw conflict(`userName ${userName} already exists (id ${taken.scim_id})`);
}

/**
 * Writes a User's new resource and groups (pending); version moves only when something
 * changed. Written only over the version read (`before`): undefined when another request
 * changed the User (or a Group its groups) since, and the caller reads it again.
 */
export async function updateUser(db: Db, before: ScimUserRow, user: ScimUserResource, groups: readonly string[], changed: boolean, deleted = false): Promise<ScimUserRow | undefined> {
  return db
    .updateTable('trainsync.scim_users')
    .set({
      user_name: user.userName,
      external_id: typeof user.externalId === 'string' ? user.externalId : null,
      active: user.active,
      resource: JSON.stringify(user),
      groups: [...groups],
      pending: true,
      // A new write is planned again: the quarantine was of the version before.
      quarantined_at: null,
      quarantine_reason: null,
      ...(changed ? { version: before.version + 1, updated_at: sql<Date>`now()` } : {}),
      ...(deleted ? { deleted_at: sql<Date>`now()` } : {}),
    })
    .where('scim_id', '=', before.scim_id)
    .where('version', '=', before.version)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Marks Users' changes planned and queued (or found to need nothing), with the platform
 * state each planned version stated (null for a change that needed no plan: a deleted
 * User's disable made moot). A User changed since the version planned stays pending for its
 * own plan; when no plan of it was recorded yet, the state of this one is (it was planned and
 * queued all the same), so that change, if it keeps that state (a title PATCHed while its
 * create was being planned), is settled by the queued actions rather than left to the sweep.
 * Never over a state recorded already: a stale version planned late does not overwrite a newer one's.
 */
export async function markPlanned({ db, org }: OrgDb, planned: readonly { scimId: string; version: number; state: string | null }[]): Promise<void> {
  if (planned.length === 0) return;
  await sql`
    update trainsync.scim_users u
       set pending = case when u.version = p.version then false else u.pending end,
           planned_state = p.state
      from unnest(${planned.map((p) => p.scimId)}::uuid[], ${planned.map((p) => p.version)}::int[], ${planned.map((p) => p.state)}::text[]) as p(scim_id, version, state)
     where u.org = ${org} and u.scim_id = p.scim_id
       and (u.version = p.version or (u.version > p.version and u.planned_state is null and p.state is not null))`.execute(db);
}

/** Users whose change is not planned yet and was written more than `olderThanMs` ago (deleted ones included: their disable is due): their ids. */
export async function pendingUsers({ db, org }: OrgDb, olderThanMs: number, limit: number): Promise<Pick<ScimUserRow, 'scim_id' | 'employee_id'>[]> {
  return db
    .selectFrom('trainsync.scim_users')
    .select(['scim_id', 'employee_id'])
    .where('org', '=', org)
    .where('pending', '=', true)
    .where('updated_at', '<', sql<Date>`now() - make_interval(secs => ${olderThanMs / 1000})`)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

/** The Users of the given ids, deleted ones included; with `pendingOnly`, only those not planned yet. */
export async function usersOfIds({ db, org }: OrgDb, scimIds: readonly string[], options: { pendingOnly?: boolean } = {}): Promise<ScimUserRow[]> {
  return db.selectFrom('trainsync.scim_users').selectAll().where('org', '=', org).where('scim_id', 'in', scimIds).$if(options.pendingOnly === true, (q) => q.where('pending', '=', true)).execute();
}

/** Which of the employees a live User stands for. */
export async function employeesWithLiveUser({ db, org }: OrgDb, employeeIds: readonly string[]): Promise<Set<string>> {
  if (employeeIds.length === 0) return new Set();
  const rows = await db.selectFrom('trainsync.scim_users').select('employee_id').where('org', '=', org).where('deleted_at', 'is', null).where('employee_id', 'in', employeeIds).execute();
  return new Set(rows.map((r) => r.employee_id));
}

/** The live Users in any of the groups, oldest first, with their groups. */
export async function liveUsersInGroups({ db, org }: OrgDb, groupIds: readonly string[]): Promise<Array<Pick<ScimUserRow, 'scim_id' | 'user_name' | 'groups'>>> {
  return db
    .selectFrom('trainsync.scim_users')
    .select(['scim_id', 'user_name', 'groups'])
    .where('org', '=', org)
    .where('deleted_at', 'is', null)
    .where(sql<boolean>`groups && ${sql.val(groupIds)}::uuid[]`)
    .orderBy('created_at')
    .execute();
}

/** Adds the group to the `added` Users' groups and removes it from the `removed` Users'; each goes back to pending. */
export async function changeGroupMembers({ db, org }: OrgDb, groupId: string, added: readonly string[], removed: readonly string[]): Promise<void> {
  await db
    .updateTable('trainsync.scim_users')
    .set({
      groups: sql<string[]>`case when scim_id = any(${sql.val(added)}::uuid[])
                                 then array(select distinct unnest(array_append(groups, ${groupId}::uuid)) order by 1)
                                 else array_remove(groups, ${groupId}::uuid) end`,
      pending: true,
      quarantined_at: null,
      quarantine_reason: null,
      version: sql<number>`version + 1`,
      updated_at: sql<Date>`now()`,
    })
    .where('org', '=', org)
    .where('scim_id', 'in', [...added, ...removed])
    .execute();
}

/** The Users go back to active (a held deactivation rejected), pending to be planned again. */
export async function reactivateUsers({ db, org }: OrgDb, scimIds: readonly string[]): Promise<void> {
  await db
    .updateTable('trainsync.scim_users')
    .set({
      active: true,
      resource: sql<string>`jsonb_set(resource, '{active}', 'true'::jsonb)`,
      pending: true,
      quarantined_at: null,
      quarantine_reason: null,
      version: sql<number>`version + 1`,
      updated_at: sql<Date>`now()`,
    })
    .where('org', '=', org)
    .where('scim_id', 'in', scimIds)
    .execute();
}

/** The longest reason kept: an error's message, never a value of the User (the mapping's errors name attributes only). */
const MAX_REASON_CHARS = 500;

/**
 * Sets Users aside whose change cannot be planned (sql/migrations/0022_scim_quarantine.sql):
 * no longer pending, so the sweep stops trying them and nothing is batched with them again.
 * Only the version that failed: a User written since stays pending for its own plan. Returns
 * the ids quarantined.
 */
export async function quarantineUsers({ db, org }: OrgDb, users: readonly { scimId: string; version: number; reason: string }[]): Promise<string[]> {
  if (users.length === 0) return [];
  const { rows } = await sql<{ scim_id: string }>`
    update trainsync.scim_users u
       set pending = false, quarantined_at = now(), quarantine_reason = left(q.reason, ${MAX_REASON_CHARS})
      from unnest(${users.map((u) => u.scimId)}::uuid[], ${users.map((u) => u.version)}::int[], ${users.map((u) => u.reason)}::text[]) as q(scim_id, version, reason)
     where u.org = ${org} and u.scim_id = q.scim_id and u.version = q.version and u.pending
    returning u.scim_id`.execute(db);
  return rows.map((r) => r.scim_id);
}

/** A quarantined User as an operator sees it. */
export interface QuarantinedUser {
  org: string;
  scim_id: string;
  user_name: string;
  employee_id: string;
  deleted: boolean;
  quarantined_at: Date;
  reason: string;
}

/** The quarantined Users of the organisations, newest first, at most `limit` per organisation, and how many each has. */
export async function quarantinedUsersOf(db: Db, orgs: readonly string[], limit: number): Promise<{ rows: QuarantinedUser[]; counts: Map<string, number> }> {
  if (orgs.length === 0) return { rows: [], counts: new Map() };
  const { rows } = await sql<QuarantinedUser & { n: number }>`
    select org, scim_id, user_name, employee_id, deleted, quarantined_at, reason, n from (
      select org, scim_id, user_name, employee_id, deleted_at is not null as deleted, quarantined_at, coalesce(quarantine_reason, '') as reason,
             row_number() over (partition by org order by quarantined_at desc, scim_id) as k,
             count(*) over (partition by org)::int as n
        from trainsync.scim_users
       where org = any(${[...orgs]}::text[]) and quarantined_at is not null
    ) q where k <= ${limit}
    order by org, quarantined_at desc, scim_id`.execute(db);
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.org, r.n);
  return { rows: rows.map(({ n: _n, ...r }) => r), counts };
}

/** An organisation's SCIM Users waiting: changes not planned yet (pending) and Users set aside (quarantined), with the oldest of each. */
export interface ScimBacklog {
  org: string;
  pending: number;
  /** When the oldest pending User was written; null when none is pending. */
  oldestPending: Date | null;
  quarantined: number;
  /** When the oldest quarantined User was set aside; null when none is. */
  oldestQuarantined: Date | null;
}

/** The organisations of `orgs` with a pending or quarantined User: one statement (the metrics, at each scrape). */
export async function scimBacklogsOf(db: Db, orgs: readonly string[]): Promise<ScimBacklog[]> {
  if (orgs.length === 0) return [];
  const { rows } = await sql<{ org: string; pending: number; oldest_pending: Date | null; quarantined: number; oldest_quarantined: Date | null }>`
    select org,
           count(*) filter (where pending)::int as pending, min(updated_at) filter (where pending) as oldest_pending,
           count(*) filter (where quarantined_at is not null)::int as quarantined, min(quarantined_at) as oldest_quarantined
      from trainsync.scim_users
     where org = any(${[...orgs]}::text[]) and (pending or quarantined_at is not null)
     group by org order by org`.execute(db);
  return rows.map((r) => ({ org: r.org, pending: r.pending, oldestPending: r.oldest_pending, quarantined: r.quarantined, oldestQuarantined: r.oldest_quarantined }));
}
