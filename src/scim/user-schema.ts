import { z } from 'zod';
import { ENTERPRISE_SCHEMA } from './discovery.ts';
import { badRequest } from './errors.ts';

/**
 * The attributes of a User that the mapping (user-mapping.ts), the store and the plan read,
 * as a zod schema checked at intake (create, replace, the resource a PATCH leaves): a wrong
 * one is a 400 invalidValue naming it, before anything is written or answered 2xx. A value
 * that passed here is one the mapping can turn into a feed row: nothing stored waits for a
 * plan that would throw. Attribute names are canonical by then (discovery.ts). Attributes
 * the mapping does not read (displayName, locale, addresses…) are kept as given.
 */

/** The identity keys (userName, externalId, employeeNumber) are indexed: Postgres's b-tree takes about 2,700 bytes an entry. */
export const MAX_KEY_CHARS = 256;
/** Any other text the platform gets (names, title, department…). */
export const MAX_TEXT_CHARS = 1024;

const textOf = (max: number) =>
  z
    .union([z.string(), z.number(), z.null()], { error: 'expected text' })
    .optional()
    .refine((v) => typeof v !== 'string' || v.length <= max, `expected at most ${max} characters`);
const key = textOf(MAX_KEY_CHARS);
const text = textOf(MAX_TEXT_CHARS);
const flag = z.union([z.boolean(), z.string().regex(/^(true|false)$/i, 'expected true or false')], { error: 'expected true or false' }).nullish();

const emailEntry = z.looseObject({ value: key, type: text, primary: flag }, { error: 'expected an object (value, type, primary)' });

const enterprise = z.looseObject(
  {
    employeeNumber: key,
    department: text,
    costCenter: text,
    organization: text,
    division: text,
    // Entra's PATCH of the manager names its id as plain text; otherwise an object with `value`.
    manager: z.union([z.string(), z.looseObject({ value: key })], { error: 'expected an object with value (the manager\'s id)' }).nullish()
      .refine((v) => typeof v !== 'string' || v.length <= MAX_KEY_CHARS, `expected at most ${MAX_KEY_CHARS} characters`),
  },
  { error: 'expected an object' },
);

export const userAttributesSchema = z.looseObject({
  schemas: z.array(z.string().max(MAX_TEXT_CHARS), { error: 'expected a list of schema URNs' }).nullish(),
  userName: key,
  externalId: key,
  active: flag,
  title: text,
  name: z.looseObject({ givenName: text, familyName: text }, { error: 'expected an object with givenName and familyName' }).nullish(),
  emails: z.array(emailEntry, { error: 'expected a list of { value, type, primary }' }).nullish(),
  [ENTERPRISE_SCHEMA]: enterprise.nullish(),
});

/** An issue's path as SCIM names the attribute: `name.givenName`, `emails[1].value`, `urn:…:User:department`. */
function attributeName(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (out === '') out = String(segment);
    else out += out === ENTERPRISE_SCHEMA ? `:${String(segment)}` : `.${String(segment)}`;
  }
  return out || 'the body';
}

/** 400 invalidValue naming the first attribute of the User (canonical names) the mapping cannot read. */
export function checkUserAttributes(user: Record<string, unknown>): void {
  const parsed = userAttributesSchema.safeParse(user);
  if (parsed.success) return;
  const issue = parsed.error.issues[0]!;
  // Never the value itself: it may be long, and the detail is logged.
  throw badRequest(`${attributeName(issue.path)}: ${issue.message}`, 'invalidValue');
}
