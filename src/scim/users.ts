import type { Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import { ENTERPRISE_SCHEMA, KNOWN_USER_KEYS, LIST_SCHEMA } from './discovery.ts';
import { badRequest } from './errors.ts';
import { parseFilter, parsePage } from './filter.ts';
import { canonicalJson } from './json.ts';
import { applyPatch } from './patch.ts';
import { checkUserNameFree, findUser, listUsers, updateUser, type ScimUserRow } from './store.ts';
import { namedEmployeeId, parseUserResource, requireNames, type ScimUserResource } from './user-mapping.ts';
import { withTransaction, type PgLender } from '../warehouse/transaction.ts';

/** The /Users operations. Each change is durable (scim_users, then the batch's employee row and jobs) before it is answered. */

export interface ScimAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ResourceContext {
  /** The organisation whose path and token the request came by: every read and write is of its Users only. */
  org: string;
  db: Kysely<Database>;
  withPgClient: PgLender;
  /** Plans and enqueues a User's current state; resolves once its employee row and jobs are durable. */
  submit(scimId: string): Promise<void>;
  /** Inserts a new User and plans it in the next batch; resolves with its row once that batch is durable (409 when taken). */
  create(user: ScimUserResource): Promise<ScimUserRow>;
  /** e.g. https://idp-facing.example.com/scim/v2 */
  base: string;
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

export async function createUser(ctx: ResourceContext, body: unknown): Promise<ScimAnswer> {
  const user = parseUserResource(body);
  requireNames(user);
  const row = await ctx.create(user);
  const location = `${ctx.base}/Users/${row.scim_id}`;
  return { status: 201, body: userResponse(row, ctx.base), headers: { location } };
}

export async function getUser(ctx: ResourceContext, scimId: string): Promise<ScimAnswer> {
  return { status: 200, body: userResponse(await findUser(ctx.db, ctx.org, scimId), ctx.base) };
}

export async function searchUsers(ctx: ResourceContext, params: URLSearchParams): Promise<ScimAnswer> {
  const filter = parseFilter(params.get('filter'), ['userName', 'externalId', 'id']);
  const page = parsePage(params, MAX_RESULTS);
  const { total, rows } = await listUsers(ctx.db, ctx.org, filter, page);
  return {
    status: 200,
    body: { schemas: [LIST_SCHEMA], totalResults: total, startIndex: page.startIndex, itemsPerPage: rows.length, Resources: rows.map((r) => userResponse(r, ctx.base)) },
  };
}

/** The employee id is fixed when the User is created: a different one later is refused, not a silent re-key. */
function checkEmployeeId(row: ScimUserRow, user: ScimUserResource): void {
  const named = namedEmployeeId(user);
  if (named !== undefined && named !== row.employee_id) {
    throw badRequest(
      `externalId / ${ENTERPRISE_SCHEMA}:employeeNumber ${JSON.stringify(named)} differs from this User's employee id ${JSON.stringify(row.employee_id)}; ` +
        'it is the HR key and cannot change: delete the User and create it again under the new id',
      'mutability',
    );
  }
}

async function writeUser(ctx: ResourceContext, scimId: string, next: (row: ScimUserRow) => ScimUserResource, options: { deleted?: boolean } = {}): Promise<ScimUserRow> {
  const row = await withTransaction(ctx.withPgClient, async ({ db: trx }) => {
    const before = await findUser(trx, ctx.org, scimId, true);
    const user = next(before);
    checkEmployeeId(before, user);
    if (user.userName.toLowerCase() !== before.user_name.toLowerCase()) await checkUserNameFree(trx, ctx.org, user.userName, before.scim_id);
    const changed = canonicalJson(user) !== canonicalJson(before.resource) || options.deleted === true;
    return updateUser(trx, before, user, before.groups, changed, options.deleted);
  });
  await ctx.submit(row.scim_id);
  return row;
}

export async function replaceUser(ctx: ResourceContext, scimId: string, body: unknown): Promise<ScimAnswer> {
  const user = parseUserResource(body);
  requireNames(user);
  const row = await writeUser(ctx, scimId, () => user);
  return { status: 200, body: userResponse(row, ctx.base) };
}

export async function patchUser(ctx: ResourceContext, scimId: string, body: unknown): Promise<ScimAnswer> {
  const row = await writeUser(ctx, scimId, (before) => parseUserResource(applyPatch(before.resource, body, KNOWN_USER_KEYS)));
  return { status: 200, body: userResponse(row, ctx.base) };
}

/** DELETE: the account is disabled (never deleted on the platform); the User is gone (404 from now on). */
export async function deleteUser(ctx: ResourceContext, scimId: string): Promise<ScimAnswer> {
  await writeUser(ctx, scimId, (before) => ({ ...(before.resource as ScimUserResource), active: false }), { deleted: true });
  return { status: 204 };
}
