import { ENTERPRISE_SCHEMA, KNOWN_USER_KEYS, LIST_SCHEMA } from './discovery.ts';
import { badRequest, conflict } from './errors.ts';
import { parseFilter, parsePage } from './filter.ts';
import { canonicalJson } from './json.ts';
import { applyPatch } from './patch.ts';
import { projection } from './projection.ts';
import { checkUserNameFree, findUser, listUsers, updateUser, type ScimUserRow } from './store.ts';
import { namedEmployeeId, parseUserResource, requireNames, type ParsedUser, type ScimUserResource } from './user-mapping.ts';
import type { RecentUsers } from './recent-users.ts';
import type { OrgScope } from '../warehouse/scope.ts';

/**
 * The /Users operations. Each change is durable before it is answered: its row in
 * trainsync.scim_users is committed (pending); the employee row, plan and jobs follow in the
 * next batch, or the sweep after a crash (with a password, before the answer).
 */

export interface ScimAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Attribute names the body carried that no schema defines: ignored, and named in the request's log line. */
  ignored?: string[];
}

export interface ResourceContext {
  /** The handle of the organisation whose path and token the request came by: every read and write is of its Users only. */
  scope: OrgScope;
  /**
   * Plans and enqueues a User's current state, written and committed (pending) by the caller:
   * a crash before the plan leaves it to the sweep. Resolves at once, or with `wait` once its
   * employee row and jobs are durable.
   */
  submit(scimId: string, options?: { wait?: boolean }): Promise<void>;
  /** Inserts a new User (pending) and plans it; resolves with its row once committed (409 when taken), with `wait` once planned. */
  create(user: ScimUserResource, options?: { wait?: boolean }): Promise<ScimUserRow>;
  /** Throws (400) when a password could not be queued: asked before anything is written. */
  checkPassword(): void;
  /** Queues a set-password job for the User, after its jobs still queued; resolves once durable. */
  queuePassword(row: ScimUserRow, password: string): Promise<void>;
  /** e.g. https://idp-facing.example.com/scim/v2 */
  base: string;
  /** The Users this process wrote last: a change of one is written over the version remembered, without a read first. */
  recent?: RecentUsers;
}

/** Users listed per page at most (ServiceProviderConfig filter.maxResults). */
export const MAX_RESULTS = 200;

export function userResponse(row: ScimUserRow, base: string): Record<string, unknown> {
  const resource = row.resource;
  return {
    ...resource,
    id: row.scim_id,
    meta: {
      resourceType: 'User',
      created: row.created_at.toISOString(),
      lastModified: row.updated_at.toISOString(),
      location: `${base}/Users/${row.scim_id}`,
      version: `W/"${row.version}"`,
    },
  };
}

const ignoredOf = (parsed: ParsedUser): Pick<ScimAnswer, 'ignored'> => (parsed.ignored.length > 0 ? { ignored: parsed.ignored } : {});

/** A User body of a create or a replace, read (user-mapping.ts) and with both names: the routes' body schema (bodies.ts). */
export function readUserBody(body: unknown): ParsedUser {
  const parsed = parseUserResource(body);
  requireNames(parsed.user);
  return parsed;
}

export async function createUser(ctx: ResourceContext, parsed: ParsedUser): Promise<ScimAnswer> {
  if (parsed.password !== undefined) ctx.checkPassword();
  // A password's job follows the create's: that one is queued first.
  const row = await ctx.create(parsed.user, { wait: parsed.password !== undefined });
  // After the create is queued: the password job waits for it.
  if (parsed.password !== undefined) await ctx.queuePassword(row, parsed.password);
  const location = `${ctx.base}/Users/${row.scim_id}`;
  return { status: 201, body: userResponse(row, ctx.base), headers: { location }, ...ignoredOf(parsed) };
}

export async function getUser(ctx: ResourceContext, scimId: string, params: URLSearchParams): Promise<ScimAnswer> {
  return { status: 200, body: projection(params, [ENTERPRISE_SCHEMA]).apply(userResponse(await findUser(ctx.scope, scimId), ctx.base)) };
}

export async function searchUsers(ctx: ResourceContext, params: URLSearchParams): Promise<ScimAnswer> {
  const filter = parseFilter(params.get('filter'), ['userName', 'externalId', 'id', 'displayName']);
  const page = parsePage(params, MAX_RESULTS);
  const project = projection(params, [ENTERPRISE_SCHEMA]);
  const { total, rows } = await listUsers(ctx.scope, filter, page);
  return {
    status: 200,
    body: { schemas: [LIST_SCHEMA], totalResults: total, startIndex: page.startIndex, itemsPerPage: rows.length, Resources: rows.map((r) => project.apply(userResponse(r, ctx.base))) },
  };
}

/**
 * The employee id is fixed when the User is created: a different one later is refused, not a
 * silent re-key. A User not linked by the HR id it named (another live User stated it first:
 * store.ts employeeIdsFor) keeps its employee id whatever externalId it states later: that is
 * stored and filterable only.
 */
function checkEmployeeId(row: ScimUserRow, user: ScimUserResource): void {
  const named = namedEmployeeId(user);
  // Linked: the HR id its stored resource states is its employee id (or it states none).
  const stated = namedEmployeeId(row.resource as ScimUserResource);
  const linked = stated === undefined || stated === row.employee_id;
  if (linked && named !== undefined && named !== row.employee_id) {
    throw badRequest(
      `externalId / ${ENTERPRISE_SCHEMA}:employeeNumber ${JSON.stringify(named)} differs from this User's employee id ${JSON.stringify(row.employee_id)}; ` +
        'it is the HR key and cannot change: delete the User and create it again under the new id',
      'mutability',
    );
  }
}

/** Times a write is tried again when another request changed the User between its read and its write (then a 409). */
const WRITE_ATTEMPTS = 5;

/**
 * A change of a stored User: read, changed, and written over the version read, in two
 * statements and no transaction held across them (a PATCH is answered in two round trips);
 * a User changed in between is read again. A User this process wrote last is not read: the
 * change is written over the version remembered (recent-users.ts), one round trip; should that
 * not be the stored version, or the change be refused, it is read and done again, so an answer
 * (a 400, a 409) is only ever given on the User as read. Committed (pending) before it is planned.
 */
async function writeUser(ctx: ResourceContext, scimId: string, next: (row: ScimUserRow) => ParsedUser, options: { deleted?: boolean } = {}): Promise<{ row: ScimUserRow; parsed: ParsedUser }> {
  let remembered = ctx.recent?.get(scimId);
  for (let attempt = 1; ; attempt += 1) {
    const fromMemory = remembered !== undefined;
    const before = remembered ?? (await findUser(ctx.scope, scimId));
    remembered = undefined;
    let parsed: ParsedUser;
    let row: ScimUserRow | undefined;
    try {
      parsed = next(before);
      if (parsed.password !== undefined) ctx.checkPassword();
      const { user } = parsed;
      checkEmployeeId(before, user);
      if (user.userName.toLowerCase() !== before.user_name.toLowerCase()) await checkUserNameFree(ctx.scope, user.userName, before.scim_id);
      const changed = canonicalJson(user) !== canonicalJson(before.resource) || options.deleted === true;
      row = await updateUser(ctx.scope.db, before, user, before.groups, changed, options.deleted);
    } catch (error) {
      if (!fromMemory) throw error;
      // Refused on the row remembered, which may be older than the stored one: decided again on the User as read.
      ctx.recent?.forget(scimId);
      attempt -= 1;
      continue;
    }
    if (row === undefined) {
      ctx.recent?.forget(scimId);
      // Not the stored version any more: read it (a miss of the memory is no conflict of its own).
      if (fromMemory) attempt -= 1;
      if (attempt < WRITE_ATTEMPTS) continue;
      throw conflict(`User ${scimId} was changed by other requests at the same time ${WRITE_ATTEMPTS} times over; send it again`);
    }
    if (options.deleted === true) ctx.recent?.forget(scimId);
    else ctx.recent?.remember(row);
    // A password's job follows the jobs of this change: they are queued first.
    await ctx.submit(row.scim_id, { wait: parsed.password !== undefined });
    if (parsed.password !== undefined) await ctx.queuePassword(row, parsed.password);
    return { row, parsed };
  }
}

export async function replaceUser(ctx: ResourceContext, scimId: string, parsed: ParsedUser): Promise<ScimAnswer> {
  const { row } = await writeUser(ctx, scimId, () => parsed);
  return { status: 200, body: userResponse(row, ctx.base), ...ignoredOf(parsed) };
}

export async function patchUser(ctx: ResourceContext, scimId: string, body: unknown): Promise<ScimAnswer> {
  const { row, parsed } = await writeUser(ctx, scimId, (before) => parseUserResource(applyPatch(before.resource, body, KNOWN_USER_KEYS)));
  return { status: 200, body: userResponse(row, ctx.base), ...ignoredOf(parsed) };
}

/** DELETE: the account is disabled (never deleted on the platform); the User is gone (404 from now on). */
export async function deleteUser(ctx: ResourceContext, scimId: string): Promise<ScimAnswer> {
  await writeUser(ctx, scimId, (before) => ({ user: { ...(before.resource as ScimUserResource), active: false }, ignored: [] }), { deleted: true });
  return { status: 204 };
}
