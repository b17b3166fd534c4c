import { sql, type Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import { GROUP_SCHEMA, KNOWN_GROUP_KEYS, LIST_SCHEMA } from './discovery.ts';
import { badRequest, conflict, notFound } from './errors.ts';
import { parseFilter, parsePage } from './filter.ts';
import { isObject } from './json.ts';
import { applyPatch } from './patch.ts';
import { findUsersByIds } from './store.ts';
import { MAX_RESULTS, type ResourceContext, type ScimAnswer } from './users.ts';

/**
 * /Groups: the platform's existing groups (training.groups, as `sync groups` last listed
 * them). The SCIM id is the platform group GUID. The platform cannot create groups, so
 * POST only maps: by externalId mapped before, by a GUID as externalId, or by
 * displayName (case-insensitive); an unknown one is refused (400 invalidValue) naming
 * the fix. Member changes become add-to-group / remove-from-group jobs through the
 * members' own plans.
 */

interface GroupRow {
  group_id: string;
  name: string;
  external_id: string | null;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The organisation's platform groups (training.groups rows of org; its org column is the sync wing's, hence `sql`). */
function groups(db: Kysely<Database>, org: string) {
  return db
    .selectFrom('training.groups as g')
    .leftJoin('trainsync.scim_groups as s', (join) => join.onRef('s.group_id', '=', 'g.group_id').on('s.org', '=', org))
    .select(['g.group_id', 'g.name', 's.external_id'])
    .where(sql<string>`g.org`, '=', org)
    .where('g.removed_at', 'is', null);
}

async function findGroup(db: Kysely<Database>, org: string, id: string): Promise<GroupRow> {
  const row = GUID.test(id) ? await groups(db, org).where('g.group_id', '=', id.toLowerCase()).executeTakeFirst() : undefined;
  if (!row) throw notFound(`no Group ${id}: not a platform group in training.groups (run \`trainsync sync groups\` if it is new)`);
  return row;
}

async function membersOf(db: Kysely<Database>, org: string, groupIds: readonly string[]): Promise<Map<string, { value: string; display: string }[]>> {
  const out = new Map<string, { value: string; display: string }[]>();
  if (groupIds.length === 0) return out;
  const rows = await db
    .selectFrom('trainsync.scim_users')
    .select(['scim_id', 'user_name', 'groups'])
    .where('org', '=', org)
    .where('deleted_at', 'is', null)
    .where(sql<boolean>`groups && ${sql.val(groupIds)}::uuid[]`)
    .orderBy('created_at')
    .execute();
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

const wantsMembers = (params: URLSearchParams): boolean => !/(^|,)\s*members\s*(,|$)/i.test(params.get('excludedAttributes') ?? '');

export async function searchGroups(ctx: ResourceContext, params: URLSearchParams): Promise<ScimAnswer> {
  const filter = parseFilter(params.get('filter'), ['displayName', 'externalId', 'id']);
  const page = parsePage(params, MAX_RESULTS);
  let query = groups(ctx.db, ctx.org);
  for (const { attribute, value } of filter) {
    if (attribute === 'displayName') query = query.where(sql<string>`lower(g.name)`, '=', value.toLowerCase());
    else if (attribute === 'externalId') query = query.where('s.external_id', '=', value);
    else query = query.where(sql<string>`g.group_id::text`, '=', value.toLowerCase());
  }
  const { total } = await query.clearSelect().select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow();
  const rows = page.count === 0 ? [] : await query.orderBy('g.name').orderBy('g.group_id').offset(page.startIndex - 1).limit(page.count).execute();
  const members = wantsMembers(params) ? await membersOf(ctx.db, ctx.org, rows.map((r) => r.group_id)) : undefined;
  return {
    status: 200,
    body: {
      schemas: [LIST_SCHEMA],
      totalResults: total,
      startIndex: page.startIndex,
      itemsPerPage: rows.length,
      Resources: rows.map((r) => groupResponse(r, members ? (members.get(r.group_id) ?? []) : undefined, ctx.base)),
    },
  };
}

export async function getGroup(ctx: ResourceContext, id: string, params: URLSearchParams): Promise<ScimAnswer> {
  const row = await findGroup(ctx.db, ctx.org, id);
  const members = wantsMembers(params) ? ((await membersOf(ctx.db, ctx.org, [row.group_id])).get(row.group_id) ?? []) : undefined;
  return { status: 200, body: groupResponse(row, members, ctx.base) };
}

function memberIds(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw badRequest('members: expected a list of {"value": "<User id>"}', 'invalidValue');
  return value.map((m) => {
    if (!isObject(m) || typeof m.value !== 'string') throw badRequest('members: each member needs "value": the User id', 'invalidValue');
    return m.value.toLowerCase();
  });
}

function checkGroupBody(body: unknown): Record<string, unknown> {
  if (!isObject(body)) throw badRequest('the body must be a JSON object (a SCIM Group)', 'invalidSyntax');
  for (const key of Object.keys(body)) {
    if (!KNOWN_GROUP_KEYS.has(key.toLowerCase())) throw badRequest(`unknown attribute "${key}" in a Group (see GET /Schemas)`, 'invalidSyntax');
  }
  return body;
}

/** Makes the group's SCIM members exactly `wanted`; each changed User is planned (group-membership jobs). */
async function setMembers(ctx: ResourceContext, groupId: string, wanted: readonly string[]): Promise<void> {
  const current = (await membersOf(ctx.db, ctx.org, [groupId])).get(groupId)?.map((m) => m.value) ?? [];
  const want = new Set(wanted);
  const added = [...want].filter((id) => !current.includes(id));
  const removed = current.filter((id) => !want.has(id));
  const known = new Set((await findUsersByIds(ctx.db, ctx.org, added)).map((u) => u.scim_id));
  const unknown = added.filter((id) => !known.has(id));
  if (unknown.length > 0) throw badRequest(`members: no User ${unknown.join(', ')}; create the User first`, 'invalidValue');
  const changed = [...added, ...removed];
  if (changed.length === 0) return;
  await ctx.db
    .updateTable('trainsync.scim_users')
    .set({
      groups: sql<string[]>`case when scim_id = any(${sql.val(added)}::uuid[])
                                 then array(select distinct unnest(array_append(groups, ${groupId}::uuid)) order by 1)
                                 else array_remove(groups, ${groupId}::uuid) end`,
      pending: true,
      version: sql<number>`version + 1`,
      updated_at: sql<Date>`now()`,
    })
    .where('org', '=', ctx.org)
    .where('scim_id', 'in', changed)
    .execute();
  await Promise.all(changed.map((id) => ctx.submit(id)));
}

/** POST /Groups: maps an existing platform group; never creates one. */
export async function createGroup(ctx: ResourceContext, body: unknown): Promise<ScimAnswer> {
  const group = checkGroupBody(body);
  const displayName = typeof group.displayName === 'string' ? group.displayName.trim() : '';
  const externalId = typeof group.externalId === 'string' && group.externalId.trim() !== '' ? group.externalId.trim() : null;
  if (displayName === '' && externalId === null) throw badRequest('displayName is required: the name of an existing platform group', 'invalidValue');
  let row: GroupRow | undefined;
  if (externalId !== null) row = await groups(ctx.db, ctx.org).where('s.external_id', '=', externalId).executeTakeFirst();
  if (!row && externalId !== null && GUID.test(externalId)) row = await groups(ctx.db, ctx.org).where('g.group_id', '=', externalId.toLowerCase()).executeTakeFirst();
  if (!row && displayName !== '') {
    const named = await groups(ctx.db, ctx.org).where(sql<string>`lower(g.name)`, '=', displayName.toLowerCase()).execute();
    if (named.length > 1) throw conflict(`${named.length} platform groups are named ${JSON.stringify(displayName)}; give the group's GUID as externalId to pick one`);
    row = named[0];
  }
  if (!row) {
    throw badRequest(
      `no platform group named ${JSON.stringify(displayName || externalId)}: the training platform cannot create groups over its API. ` +
        'Create it in the platform, run `trainsync sync groups`, then push the group again (or give an existing group\'s GUID as externalId)',
      'invalidValue',
    );
  }
  await ctx.db
    .insertInto('trainsync.scim_groups')
    .values({ org: ctx.org, group_id: row.group_id, display_name: displayName || row.name, external_id: externalId })
    .onConflict((oc) => oc.columns(['org', 'group_id']).doUpdateSet({ display_name: displayName || row.name, external_id: externalId ?? sql<string>`trainsync.scim_groups.external_id` }))
    .execute();
  if (group.members !== undefined) await setMembers(ctx, row.group_id, [...new Set([...((await membersOf(ctx.db, ctx.org, [row.group_id])).get(row.group_id)?.map((m) => m.value) ?? []), ...memberIds(group.members)])]);
  const mapped = await findGroup(ctx.db, ctx.org, row.group_id);
  const members = (await membersOf(ctx.db, ctx.org, [row.group_id])).get(row.group_id) ?? [];
  return { status: 201, body: groupResponse(mapped, members, ctx.base), headers: { location: `${ctx.base}/Groups/${row.group_id}` } };
}

function checkName(row: GroupRow, displayName: unknown): void {
  if (displayName !== undefined && (typeof displayName !== 'string' || displayName.trim().toLowerCase() !== row.name.toLowerCase())) {
    throw badRequest(`displayName: the platform group ${row.group_id} is named ${JSON.stringify(row.name)}; rename groups in the platform, not over SCIM`, 'mutability');
  }
}

export async function patchGroup(ctx: ResourceContext, id: string, body: unknown): Promise<ScimAnswer> {
  const row = await findGroup(ctx.db, ctx.org, id);
  const current = (await membersOf(ctx.db, ctx.org, [row.group_id])).get(row.group_id) ?? [];
  const document = { schemas: [GROUP_SCHEMA], displayName: row.name, members: current.map((m) => ({ value: m.value })) };
  const patched = applyPatch(document, body, KNOWN_GROUP_KEYS);
  checkName(row, patched.displayName);
  await setMembers(ctx, row.group_id, memberIds(patched.members));
  return { status: 204 };
}

export async function replaceGroup(ctx: ResourceContext, id: string, body: unknown): Promise<ScimAnswer> {
  const row = await findGroup(ctx.db, ctx.org, id);
  const group = checkGroupBody(body);
  checkName(row, group.displayName);
  await setMembers(ctx, row.group_id, memberIds(group.members));
  return getGroup(ctx, row.group_id, new URLSearchParams());
}

/** DELETE /Groups/{id}: forgets the mapping only; the platform group and its memberships stay. */
export async function deleteGroup(ctx: ResourceContext, id: string): Promise<ScimAnswer> {
  const row = await findGroup(ctx.db, ctx.org, id);
  await ctx.db.deleteFrom('trainsync.scim_groups').where('org', '=', ctx.org).where('group_id', '=', row.group_id).execute();
  return { status: 204 };
}
