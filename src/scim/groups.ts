import { sql } from 'kysely';
import { GROUP_SCHEMA, KNOWN_GROUP_KEYS, LIST_SCHEMA } from './discovery.ts';
import { badRequest, conflict, notFound } from './errors.ts';
import { parseFilter, parsePage } from './filter.ts';
import { isObject } from './json.ts';
import { applyPatch } from './patch.ts';
import { changeGroupMembers, findUsersByIds, liveUsersInGroups } from './store.ts';
import { projection } from './projection.ts';
import { MAX_RESULTS, type ResourceContext, type ScimAnswer } from './users.ts';
import type { OrgDb, OrgTx } from '../warehouse/scope.ts';

/**
 * /Groups: the platform's existing groups (training.groups, as `sync groups` last listed
 * them). The SCIM id is the platform group GUID. The platform cannot create groups, so
 * POST only maps: the displayName (case-insensitive) decides which group; without one, an
 * externalId mapped before or a GUID given as externalId. An unknown one is refused (400
 * invalidValue) naming the fix; an externalId already mapped to another group is 409
 * uniqueness. Member changes become add-to-group / remove-from-group jobs through the
 * members' own plans. Each request writes in one transaction: a refused member leaves nothing written.
 */


interface GroupRow {
  group_id: string;
  name: string;
  external_id: string | null;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The organisation's platform groups (training.groups rows of org; its org column is the sync wing's, hence `sql`). */
function groups({ db, org }: OrgDb) {
  return db
    .selectFrom('training.groups as g')
    .leftJoin('trainsync.scim_groups as s', (join) => join.onRef('s.group_id', '=', 'g.group_id').on('s.org', '=', org))
    .select(['g.group_id', 'g.name', 's.external_id'])
    .where(sql<string>`g.org`, '=', org)
    .where('g.removed_at', 'is', null);
}

async function findGroup(scope: OrgDb, id: string): Promise<GroupRow> {
  const row = GUID.test(id) ? await groups(scope).where('g.group_id', '=', id.toLowerCase()).executeTakeFirst() : undefined;
  if (!row) throw notFound(`no Group ${id}: not a platform group in training.groups (run \`trainsync sync groups\` if it is new)`);
  return row;
}

async function membersOf(scope: OrgDb, groupIds: readonly string[]): Promise<Map<string, { value: string; display: string }[]>> {
  const out = new Map<string, { value: string; display: string }[]>();
  if (groupIds.length === 0) return out;
  const rows = await liveUsersInGroups(scope, groupIds);
  for (const r of rows) {
    for (const g of r.groups) if (groupIds.includes(g)) (out.get(g) ?? out.set(g, []).get(g)!).push({ value: r.scim_id, display: r.user_name });
  }
  return out;
}

function groupResponse(row: GroupRow, members: { value: string; display: string }[] | undefined, base: string): Record<string, unknown> {
  return {
    schemas: [GROUP_SCHEMA],
    id: row.group_id,
    displayName: row.name,
    ...(row.external_id ? { externalId: row.external_id } : {}),
    ...(members ? { members: members.map((m) => ({ ...m, $ref: `${base}/Users/${m.value}`, type: 'User' })) } : {}),
    meta: { resourceType: 'Group', location: `${base}/Groups/${row.group_id}` },
  };
}

export async function searchGroups(ctx: ResourceContext, params: URLSearchParams): Promise<ScimAnswer> {
  const filter = parseFilter(params.get('filter'), ['displayName', 'externalId', 'id']);
  const page = parsePage(params, MAX_RESULTS);
  let query = groups(ctx.scope);
  for (const { attribute, value } of filter) {
    if (attribute === 'displayName') query = query.where(sql<string>`lower(g.name)`, '=', value.toLowerCase());
    else if (attribute === 'externalId') query = query.where('s.external_id', '=', value);
    else query = query.where(sql<string>`g.group_id::text`, '=', value.toLowerCase());
  }
  const { total } = await query.clearSelect().select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow();
  const rows = page.count === 0 ? [] : await query.orderBy('g.name').orderBy('g.group_id').offset(page.startIndex - 1).limit(page.count).execute();
  const project = projection(params);
  const members = project.wants('members') ? await membersOf(ctx.scope, rows.map((r) => r.group_id)) : undefined;
  return {
    status: 200,
    body: {
      schemas: [LIST_SCHEMA],
      totalResults: total,
      startIndex: page.startIndex,
      itemsPerPage: rows.length,
      Resources: rows.map((r) => project.apply(groupResponse(r, members ? (members.get(r.group_id) ?? []) : undefined, ctx.base))),
    },
  };
}

export async function getGroup(ctx: ResourceContext, id: string, params: URLSearchParams): Promise<ScimAnswer> {
  const row = await findGroup(ctx.scope, id);
  const project = projection(params);
  const members = project.wants('members') ? ((await membersOf(ctx.scope, [row.group_id])).get(row.group_id) ?? []) : undefined;
  return { status: 200, body: project.apply(groupResponse(row, members, ctx.base)) };
}

const USER_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The member ids of a members value; anything but a list of {"value": "<User id>"} is 400 invalidValue, before anything is written. */
function memberIds(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw badRequest(`members: expected a list of {"value": "<User id>"}, got ${JSON.stringify(value).slice(0, 80)}`, 'invalidValue');
  const ids = value.map((m) => {
    if (!isObject(m) || typeof m.value !== 'string') throw badRequest('members: each member needs "value": the User id', 'invalidValue');
    return m.value.trim();
  });
  const bad = ids.filter((id) => !USER_ID.test(id));
  if (bad.length > 0) {
    throw badRequest(`members: ${bad.map((b) => JSON.stringify(b.slice(0, 80))).join(', ')} ${bad.length === 1 ? 'is' : 'are'} not a User id (the id trainsync gave the User, a UUID); nothing was changed`, 'invalidValue');
  }
  return ids.map((id) => id.toLowerCase());
}

/** A Group body with the attributes no schema defines left out (ignored, as on Users). */
function checkGroupBody(body: unknown): Record<string, unknown> {
  if (!isObject(body)) throw badRequest('the body must be a JSON object (a SCIM Group)', 'invalidSyntax');
  return Object.fromEntries(Object.entries(body).filter(([key]) => KNOWN_GROUP_KEYS.has(key.toLowerCase())));
}

/** A Group body's value of an attribute, whatever its case (Entra: "DisplayName"). */
function attribute(body: Record<string, unknown>, name: string): unknown {
  const key = Object.keys(body).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : body[key];
}

/**
 * Makes the group's SCIM members exactly `wanted`, within the request's transaction; returns
 * the Users whose groups changed (each to plan once it commits).
 */
async function setMembers(ctx: ResourceContext, trx: OrgTx, groupId: string, wanted: readonly string[]): Promise<string[]> {
  const current = (await membersOf(trx, [groupId])).get(groupId)?.map((m) => m.value) ?? [];
  const want = new Set(wanted);
  const added = [...want].filter((id) => !current.includes(id));
  const removed = current.filter((id) => !want.has(id));
  const known = new Set((await findUsersByIds(trx, added)).map((u) => u.scim_id));
  const unknown = added.filter((id) => !known.has(id));
  if (unknown.length > 0) throw badRequest(`members: no User ${unknown.join(', ')}; create the User first (nothing was changed)`, 'invalidValue');
  const changed = [...added, ...removed];
  if (changed.length === 0) return [];
  await changeGroupMembers(trx, groupId, added, removed);
  return changed;
}

/** Runs a request's writes in one transaction (durable when it commits: the Users it changed are pending), then submits those Users to be planned. */
async function inOneTransaction<T>(ctx: ResourceContext, write: (trx: OrgTx) => Promise<{ value: T; changed: string[] }>): Promise<T> {
  const { value, changed } = await ctx.scope.transaction(write);
  await Promise.all(changed.map((id) => ctx.submit(id)));
  return value;
}

/** The platform group a POST names: by displayName; without one, by an externalId mapped before or a GUID as externalId. */
async function pickGroup(scope: OrgDb, displayName: string, externalId: string | null): Promise<GroupRow | undefined> {
  if (displayName !== '') {
    const named = await groups(scope).where(sql<string>`lower(g.name)`, '=', displayName.toLowerCase()).execute();
    if (named.length <= 1) return named[0];
    const chosen = externalId !== null && GUID.test(externalId) ? named.find((g) => g.group_id === externalId.toLowerCase()) : undefined;
    if (chosen) return chosen;
    throw conflict(`${named.length} platform groups are named ${JSON.stringify(displayName)}; give the group's GUID as externalId to pick one`);
  }
  if (externalId === null) return undefined;
  return (
    (await groups(scope).where('s.external_id', '=', externalId).executeTakeFirst()) ??
    (GUID.test(externalId) ? await groups(scope).where('g.group_id', '=', externalId.toLowerCase()).executeTakeFirst() : undefined)
  );
}

/** A POST /Groups body, read: the group it names and the members it adds (undefined: it names none). */
export interface GroupCreate {
  displayName: string;
  externalId: string | null;
  members: string[] | undefined;
}

/** Reads a POST /Groups body (the route's body schema, bodies.ts): 400 before anything is read from the store. */
export function readGroupCreate(body: unknown): GroupCreate {
  const group = checkGroupBody(body);
  const rawName = attribute(group, 'displayName');
  const rawExternal = attribute(group, 'externalId');
  const displayName = typeof rawName === 'string' ? rawName.trim() : '';
  const externalId = typeof rawExternal === 'string' && rawExternal.trim() !== '' ? rawExternal.trim() : null;
  if (displayName === '' && externalId === null) throw badRequest('displayName is required: the name of an existing platform group', 'invalidValue');
  const rawMembers = attribute(group, 'members');
  const members = memberIds(rawMembers);
  return { displayName, externalId, members: rawMembers === undefined ? undefined : members };
}

/** POST /Groups: maps an existing platform group; never creates one. */
export async function createGroup(ctx: ResourceContext, { displayName, externalId, members }: GroupCreate): Promise<ScimAnswer> {
  const groupId = await inOneTransaction(ctx, async (trx) => {
    const row = await pickGroup(trx, displayName, externalId);
    if (!row) {
      throw badRequest(
        `no platform group named ${JSON.stringify(displayName || externalId)}: the training platform cannot create groups over its API. ` +
          'Create it in the platform, run `trainsync sync groups`, then push the group again (or give an existing group\'s GUID as externalId)',
        'invalidValue',
      );
    }
    if (externalId !== null) {
      const holder = await trx.db.selectFrom('trainsync.scim_groups').select(['group_id', 'display_name']).where('org', '=', ctx.scope.org).where('external_id', '=', externalId).where('group_id', '<>', row.group_id).executeTakeFirst();
      if (holder) throw conflict(`externalId ${JSON.stringify(externalId)} is already the Group ${holder.group_id} (${holder.display_name}); each platform group has its own externalId`);
    }
    await trx.db
      .insertInto('trainsync.scim_groups')
      .values({ org: ctx.scope.org, group_id: row.group_id, display_name: displayName || row.name, external_id: externalId })
      .onConflict((oc) => oc.columns(['org', 'group_id']).doUpdateSet({ display_name: displayName || row.name, external_id: externalId ?? sql<string>`trainsync.scim_groups.external_id` }))
      .execute();
    const current = (await membersOf(trx, [row.group_id])).get(row.group_id)?.map((m) => m.value) ?? [];
    const changed = members === undefined ? [] : await setMembers(ctx, trx, row.group_id, [...new Set([...current, ...members])]);
    return { value: row.group_id, changed };
  });
  const mapped = await findGroup(ctx.scope, groupId);
  const current = (await membersOf(ctx.scope, [groupId])).get(groupId) ?? [];
  return { status: 201, body: groupResponse(mapped, current, ctx.base), headers: { location: `${ctx.base}/Groups/${groupId}` } };
}

function checkName(row: GroupRow, displayName: unknown): void {
  if (displayName !== undefined && (typeof displayName !== 'string' || displayName.trim().toLowerCase() !== row.name.toLowerCase())) {
    throw badRequest(`displayName: the platform group ${row.group_id} is named ${JSON.stringify(row.name)}; rename groups in the platform, not over SCIM`, 'mutability');
  }
}

export async function patchGroup(ctx: ResourceContext, id: string, body: unknown): Promise<ScimAnswer> {
  await inOneTransaction(ctx, async (trx) => {
    const row = await findGroup(trx, id);
    const current = (await membersOf(trx, [row.group_id])).get(row.group_id) ?? [];
    const document = { schemas: [GROUP_SCHEMA], displayName: row.name, members: current.map((m) => ({ value: m.value })) };
    const patched = applyPatch(document, body, KNOWN_GROUP_KEYS);
    checkName(row, patched.displayName);
    return { value: undefined, changed: await setMembers(ctx, trx, row.group_id, memberIds(patched.members)) };
  });
  return { status: 204 };
}

/** A PUT /Groups/{id} body, read: the displayName it states (checked against the group's) and its members. */
export interface GroupReplace {
  displayName: unknown;
  members: string[];
}

/** Reads a PUT /Groups/{id} body (the route's body schema, bodies.ts): 400 before the group is looked up. */
export function readGroupReplace(body: unknown): GroupReplace {
  const group = checkGroupBody(body);
  return { members: memberIds(attribute(group, 'members')), displayName: attribute(group, 'displayName') };
}

export async function replaceGroup(ctx: ResourceContext, id: string, { displayName, members }: GroupReplace): Promise<ScimAnswer> {
  const groupId = await inOneTransaction(ctx, async (trx) => {
    const row = await findGroup(trx, id);
    checkName(row, displayName);
    return { value: row.group_id, changed: await setMembers(ctx, trx, row.group_id, members) };
  });
  return getGroup(ctx, groupId, new URLSearchParams());
}
/** DELETE /Groups/{id}: forgets the mapping only; the platform group and its memberships stay. */
export async function deleteGroup(ctx: ResourceContext, id: string): Promise<ScimAnswer> {
  const row = await findGroup(ctx.scope, id);
  await ctx.scope.db.deleteFrom('trainsync.scim_groups').where('org', '=', ctx.scope.org).where('group_id', '=', row.group_id).execute();
  return { status: 204 };
}
