import type { FeedAttributes, FeedRow } from '../provisioning/feed/types.ts';
import { ENTERPRISE_SCHEMA, KNOWN_ENTERPRISE_KEYS, KNOWN_USER_KEYS, USER_ATTRIBUTES, USER_SCHEMA } from './discovery.ts';
import { badRequest } from './errors.ts';
import { isObject, type JsonObject } from './json.ts';

/**
 * A SCIM User ⇄ the HR-feed row the provisioning flow knows.
 *
 * - userName → email (lower case is the key; as given is what the platform stores)
 * - name.givenName / name.familyName → first_name / last_name
 * - active → status (active / inactive)
 * - externalId, else the enterprise extension's employeeNumber → employee_id
 * - enterprise department, costCenter, organization, division, manager.value, and title
 *   → attributes (training.employees.attributes)
 * Other core attributes (emails, displayName, locale…) are kept on the resource and
 * returned by GET, but do not reach the platform.
 */

/** A User as stored: the body given, cleaned; `id` and `meta` are added on the way out. */
export interface ScimUserResource extends JsonObject {
  schemas: string[];
  userName: string;
  active: boolean;
}

const CANONICAL_USER_KEYS = new Map([...KNOWN_USER_KEYS].map((k) => [k, [...USER_ATTRIBUTES.map((a) => a.name), 'schemas', 'id', 'externalId', 'meta', ENTERPRISE_SCHEMA].find((n) => n.toLowerCase() === k)!]));

/** `active` as a boolean; Entra sends "True"/"False" as text in some PATCH requests. */
function booleanOf(value: unknown, field: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw badRequest(`${field}: expected true or false, got ${JSON.stringify(value)}`, 'invalidValue');
}

function optionalText(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') throw badRequest(`${field}: expected text, got ${JSON.stringify(value)}`, 'invalidValue');
  const text = String(value).trim();
  return text === '' ? undefined : text;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * Checks a User body (POST, PUT, or a resource after PATCH) and returns it cleaned:
 * attribute names in their canonical case, `active` a boolean (default true), read-only
 * attributes (id, meta, groups) dropped. An attribute the schemas do not define is
 * refused: 400 invalidSyntax naming it.
 */
export function parseUserResource(body: unknown): ScimUserResource {
  if (!isObject(body)) throw badRequest('the body must be a JSON object (a SCIM User)', 'invalidSyntax');
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(body)) {
    const canonical = CANONICAL_USER_KEYS.get(key.toLowerCase());
    if (canonical === undefined) {
      throw badRequest(`unknown attribute "${key}": not in ${USER_SCHEMA} nor ${ENTERPRISE_SCHEMA} (see GET /Schemas)`, 'invalidSyntax');
    }
    if (canonical === 'id' || canonical === 'meta' || canonical === 'groups') continue;
    if (value === null) continue;
    out[canonical] = value;
  }
  const userName = optionalText(out.userName, 'userName');
  if (userName === undefined) throw badRequest('userName is required: the e-mail address of the employee', 'invalidValue');
  if (!EMAIL.test(userName)) throw badRequest(`userName ${JSON.stringify(userName)} is not an e-mail address; trainsync maps userName to the platform account's e-mail`, 'invalidValue');
  out.userName = userName;
  out.active = out.active === undefined ? true : booleanOf(out.active, 'active');
  if (out.name !== undefined && !isObject(out.name)) throw badRequest('name: expected an object with givenName and familyName', 'invalidValue');
  const enterprise = out[ENTERPRISE_SCHEMA];
  if (enterprise !== undefined) {
    if (!isObject(enterprise)) throw badRequest(`${ENTERPRISE_SCHEMA}: expected an object`, 'invalidValue');
    for (const key of Object.keys(enterprise)) {
      if (!KNOWN_ENTERPRISE_KEYS.has(key.toLowerCase())) throw badRequest(`unknown attribute "${ENTERPRISE_SCHEMA}:${key}" (see GET /Schemas)`, 'invalidSyntax');
    }
  }
  if (out.externalId !== undefined) out.externalId = optionalText(out.externalId, 'externalId');
  if (out.externalId === undefined) delete out.externalId;
  const schemas = new Set([USER_SCHEMA, ...(Array.isArray(out.schemas) ? out.schemas.filter((s): s is string => typeof s === 'string') : [])]);
  if (enterprise !== undefined) schemas.add(ENTERPRISE_SCHEMA);
  out.schemas = [...schemas];
  return out as ScimUserResource;
}

function enterpriseOf(user: ScimUserResource): JsonObject {
  const value = user[ENTERPRISE_SCHEMA];
  return isObject(value) ? value : {};
}

/** The employee id the User names: externalId, else employeeNumber; undefined when neither. */
export function namedEmployeeId(user: ScimUserResource): string | undefined {
  return optionalText(user.externalId, 'externalId') ?? optionalText(enterpriseOf(user).employeeNumber, `${ENTERPRISE_SCHEMA}:employeeNumber`);
}

/** The employee id minted for a User that names none (and whose e-mail no employee has). */
export const mintedEmployeeId = (scimId: string): string => `scim-${scimId}`;

/** First and last name, required: the platform cannot create an account without them. */
export function requireNames(user: ScimUserResource): void {
  const name = isObject(user.name) ? user.name : {};
  const missing = (['givenName', 'familyName'] as const).filter((k) => optionalText(name[k], `name.${k}`) === undefined);
  if (missing.length > 0) {
    throw badRequest(`${missing.map((k) => `name.${k}`).join(' and ')} required: the platform needs a first and last name for the account`, 'invalidValue');
  }
}

function attributesOf(user: ScimUserResource): FeedAttributes | undefined {
  const enterprise = enterpriseOf(user);
  const attributes: FeedAttributes = {};
  for (const key of ['department', 'costCenter', 'organization', 'division'] as const) {
    const value = optionalText(enterprise[key], key);
    if (value !== undefined) attributes[key] = value;
  }
  const manager = isObject(enterprise.manager) ? optionalText(enterprise.manager.value, 'manager.value') : undefined;
  if (manager !== undefined) attributes.manager = manager;
  const title = optionalText(user.title, 'title');
  if (title !== undefined) attributes.title = title;
  return Object.keys(attributes).length > 0 ? attributes : undefined;
}

/** The one-row delta HR feed a SCIM User states. */
export function toFeedRow(user: ScimUserResource, employeeId: string, groups: readonly string[]): FeedRow {
  const name = isObject(user.name) ? user.name : {};
  const attributes = attributesOf(user);
  return {
    line: 1,
    employeeId,
    email: user.userName.toLowerCase(),
    emailDisplay: user.userName,
    firstName: optionalText(name.givenName, 'name.givenName') ?? null,
    lastName: optionalText(name.familyName, 'name.familyName') ?? null,
    status: user.active ? 'active' : 'inactive',
    groups: [...new Set(groups.map((g) => g.toLowerCase()))].sort(),
    role: 'USER',
    organisationIdentifier: employeeId,
    ...(attributes ? { attributes } : {}),
  };
}
