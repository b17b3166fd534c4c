import type { FeedAttributes, FeedRow } from '../provisioning/index.ts';
import { canonicalAttributes, ENTERPRISE_SCHEMA, USER_SCHEMA } from './discovery.ts';
import { badRequest } from './errors.ts';
import { isObject, type JsonObject } from './json.ts';
import { checkUserAttributes } from './user-schema.ts';

/**
 * A SCIM User ⇄ the HR-feed row the provisioning flow knows.
 *
 * - the account's e-mail: userName when it is an e-mail address, else the one in `emails`
 *   (the primary, else type work); lower case is the key, as given is what the platform stores
 * - password (create, PUT, PATCH) → a set-password job, encrypted; never stored nor returned
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

export const isEmail = (text: string): boolean => EMAIL.test(text);

/** A User body as read: the resource to store, and what is not stored (the password, attributes no schema defines). */
export interface ParsedUser {
  user: ScimUserResource;
  /** The password sent (Okta's "Sync password"): queued encrypted, never stored. */
  password?: string;
  /** Attribute names no schema defines: ignored (an identity provider's custom mapping must not block a joiner). */
  ignored: string[];
}

/**
 * The e-mail in `emails` a User's account takes when its userName is not one: the primary
 * entry, else the first of type work. Undefined when neither is an e-mail address.
 */
function emailFromEmails(emails: unknown): string | undefined {
  if (!Array.isArray(emails)) return undefined;
  const entries = emails.filter(isObject);
  const primary = entries.find((e) => e.primary === true || (typeof e.primary === 'string' && e.primary.toLowerCase() === 'true'));
  const work = entries.find((e) => typeof e.type === 'string' && e.type.toLowerCase() === 'work');
  for (const entry of [primary, work]) {
    const value = typeof entry?.value === 'string' ? entry.value.trim() : '';
    if (isEmail(value)) return value;
  }
  return undefined;
}

/** The e-mail of the User's platform account, as given (its lower case is the identity key). */
export function accountEmail(user: ScimUserResource): string {
  return isEmail(user.userName) ? user.userName : (emailFromEmails(user.emails) ?? user.userName);
}

/**
 * Checks a User body (POST, PUT, or a resource after PATCH) and returns it cleaned:
 * attribute names in their canonical case (sub-attributes too: Entra's "Primary"), `active` a
 * boolean (default true), read-only attributes (id, meta, groups) dropped, the password taken
 * out. An attribute no schema defines is ignored and named in `ignored`. The account needs an
 * e-mail: userName, else `emails` (primary, else type work); neither is 400 naming both.
 */
export function parseUserResource(body: unknown): ParsedUser {
  if (!isObject(body)) throw badRequest('the body must be a JSON object (a SCIM User)', 'invalidSyntax');
  const { value, ignored } = canonicalAttributes(body, 'User');
  const out: JsonObject = {};
  let password: string | undefined;
  for (const [key, item] of Object.entries(value)) {
    if (key === 'id' || key === 'meta' || key === 'groups') continue;
    if (key === 'password') {
      // Never echoed back in an error: the value is a secret.
      if (item === null || item === undefined || item === '') continue;
      if (typeof item !== 'string') throw badRequest('password: expected text', 'invalidValue');
      password = item;
      continue;
    }
    if (item === null) continue;
    out[key] = item;
  }
  // Every attribute the mapping reads, checked now: a User answered 2xx is one the plan can read.
  checkUserAttributes(out);
  const userName = optionalText(out.userName, 'userName');
  if (userName === undefined) throw badRequest('userName is required: the e-mail address of the employee, or an id with the e-mail in emails', 'invalidValue');
  out.userName = userName;
  if (!isEmail(userName) && emailFromEmails(out.emails) === undefined) {
    throw badRequest(
      `userName ${JSON.stringify(userName)} is not an e-mail address and emails has none (primary, else type work): ` +
        'the platform account needs an e-mail; map a mailbox to userName or to emails[type eq "work"].value',
      'invalidValue',
    );
  }
  out.active = out.active === undefined ? true : booleanOf(out.active, 'active');
  if (out.name !== undefined && !isObject(out.name)) throw badRequest('name: expected an object with givenName and familyName', 'invalidValue');
  const enterprise = out[ENTERPRISE_SCHEMA];
  if (enterprise !== undefined && !isObject(enterprise)) throw badRequest(`${ENTERPRISE_SCHEMA}: expected an object`, 'invalidValue');
  if (out.externalId !== undefined) out.externalId = optionalText(out.externalId, 'externalId');
  if (out.externalId === undefined) delete out.externalId;
  const schemas = new Set([USER_SCHEMA, ...(Array.isArray(out.schemas) ? out.schemas.filter((s): s is string => typeof s === 'string') : [])]);
  if (enterprise !== undefined) schemas.add(ENTERPRISE_SCHEMA);
  out.schemas = [...schemas];
  return { user: out as ScimUserResource, ...(password === undefined ? {} : { password }), ignored };
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
    email: accountEmail(user).toLowerCase(),
    emailDisplay: accountEmail(user),
    firstName: optionalText(name.givenName, 'name.givenName') ?? null,
    lastName: optionalText(name.familyName, 'name.familyName') ?? null,
    status: user.active ? 'active' : 'inactive',
    groups: [...new Set(groups.map((g) => g.toLowerCase()))].sort(),
    role: 'USER',
    organisationIdentifier: employeeId,
    ...(attributes ? { attributes } : {}),
  };
}
