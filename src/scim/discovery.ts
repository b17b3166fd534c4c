/**
 * The discovery resources (RFC 7643 §5–7): what this service supports and the
 * attributes it knows. The attribute lists are also what a body is checked against:
 * an attribute outside them is refused (400), so a typo never passes silently.
 */

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

interface Attribute {
  name: string;
  type: 'string' | 'boolean' | 'complex' | 'reference' | 'dateTime';
  multiValued?: boolean;
  required?: boolean;
  mutability?: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned?: 'always' | 'default' | 'never';
  uniqueness?: 'none' | 'server';
  subAttributes?: Attribute[];
}

const str = (name: string, extra: Partial<Attribute> = {}): Attribute => ({ name, type: 'string', ...extra });
const multi = (name: string, subs: string[]): Attribute => ({ name, type: 'complex', multiValued: true, subAttributes: subs.map((s) => (s === 'primary' ? { name: s, type: 'boolean' } : str(s))) });

/** Core User attributes accepted (RFC 7643 §4.1); unmapped ones are kept on the resource, not sent to the platform. */
export const USER_ATTRIBUTES: Attribute[] = [
  str('userName', { required: true, uniqueness: 'server' }),
  { name: 'name', type: 'complex', subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((n) => str(n)) },
  str('displayName'),
  str('nickName'),
  // Okta sends it on create when "Sync password" is on: queued encrypted, never stored nor returned.
  str('password', { mutability: 'writeOnly', returned: 'never' }),
  str('profileUrl'),
  str('title'),
  str('userType'),
  str('preferredLanguage'),
  str('locale'),
  str('timezone'),
  { name: 'active', type: 'boolean' },
  multi('emails', ['value', 'display', 'type', 'primary']),
  multi('phoneNumbers', ['value', 'display', 'type', 'primary']),
  multi('ims', ['value', 'display', 'type', 'primary']),
  multi('photos', ['value', 'display', 'type', 'primary']),
  { name: 'addresses', type: 'complex', multiValued: true, subAttributes: ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type', 'primary'].map((n) => (n === 'primary' ? { name: n, type: 'boolean' as const } : str(n))) },
  multi('roles', ['value', 'display', 'type', 'primary']),
  multi('entitlements', ['value', 'display', 'type', 'primary']),
  { name: 'groups', type: 'complex', multiValued: true, mutability: 'readOnly', subAttributes: ['value', '$ref', 'display', 'type'].map((n) => str(n)) },
];

export const ENTERPRISE_ATTRIBUTES: Attribute[] = [
  str('employeeNumber'),
  str('costCenter'),
  str('organization'),
  str('division'),
  str('department'),
  { name: 'manager', type: 'complex', subAttributes: [str('value'), str('$ref'), str('displayName')] },
];

export const GROUP_ATTRIBUTES: Attribute[] = [
  str('displayName', { required: true }),
  { name: 'members', type: 'complex', multiValued: true, subAttributes: [str('value'), str('$ref'), str('display'), str('type')] },
];

/** Attributes every resource carries (RFC 7643 §3.1). */
export const COMMON_ATTRIBUTES = ['schemas', 'id', 'externalId', 'meta'] as const;

function schemaResource(id: string, name: string, description: string, attributes: Attribute[], base: string) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id,
    name,
    description,
    attributes: attributes.map((a) => ({ multiValued: false, required: false, caseExact: false, mutability: 'readWrite', returned: 'default', uniqueness: 'none', ...a })),
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  };
}

export function schemas(base: string) {
  return [
    schemaResource(USER_SCHEMA, 'User', 'User Account', USER_ATTRIBUTES, base),
    schemaResource(ENTERPRISE_SCHEMA, 'EnterpriseUser', 'Enterprise User', ENTERPRISE_ATTRIBUTES, base),
    schemaResource(GROUP_SCHEMA, 'Group', 'Group (an existing platform group; the platform cannot create groups)', GROUP_ATTRIBUTES, base),
  ];
}

export function resourceTypes(base: string) {
  const meta = (id: string) => ({ resourceType: 'ResourceType', location: `${base}/ResourceTypes/${id}` });
  return [
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'An employee: the account on the training platform',
      schema: USER_SCHEMA,
      schemaExtensions: [{ schema: ENTERPRISE_SCHEMA, required: false }],
      meta: meta('User'),
    },
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'An existing platform group (mapped by displayName or externalId)',
      schema: GROUP_SCHEMA,
      schemaExtensions: [],
      meta: meta('Group'),
    },
  ];
}

export function serviceProviderConfig(base: string, maxBodyBytes: number) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: 'https://github.com/trainsync/trainsync#scim-identity-providers',
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: 200 },
    changePassword: { supported: true },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      { type: 'oauthbearertoken', name: 'Bearer token', description: `A static bearer token (TRAINSYNC_SCIM_TOKEN or TRAINSYNC_SCIM_TOKEN_FILE); bodies up to ${maxBodyBytes} bytes`, primary: true },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

/** The canonical spelling of names (SCIM attribute names are case-insensitive: Entra sends "Primary", "Department"). */
const byLowerName = (attributes: readonly Attribute[]): Map<string, Attribute> => new Map(attributes.map((a) => [a.name.toLowerCase(), a]));
const TOP_LEVEL: Record<'User' | 'Group', Map<string, Attribute>> = {
  User: byLowerName([...COMMON_ATTRIBUTES.map((n) => ({ name: n, type: 'complex' as const })), ...USER_ATTRIBUTES, { name: ENTERPRISE_SCHEMA, type: 'complex', subAttributes: ENTERPRISE_ATTRIBUTES }]),
  Group: byLowerName([...COMMON_ATTRIBUTES.map((n) => ({ name: n, type: 'complex' as const })), ...GROUP_ATTRIBUTES]),
};

type Json = Record<string, unknown>;
const isJsonObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

function canonicalObject(value: Json, known: ReadonlyMap<string, Attribute>, prefix: string, ignored: string[]): Json {
  const out: Json = {};
  for (const [key, item] of Object.entries(value)) {
    const attribute = known.get(key.toLowerCase());
    if (attribute === undefined) {
      ignored.push(`${prefix}${key}`);
      continue;
    }
    out[attribute.name] = canonicalValue(item, attribute, `${prefix}${attribute.name}${attribute.name.startsWith('urn:') ? ':' : '.'}`, ignored);
  }
  return out;
}

function canonicalValue(item: unknown, attribute: Attribute, prefix: string, ignored: string[]): unknown {
  if (!attribute.subAttributes) return item;
  const subs = byLowerName(attribute.subAttributes);
  if (Array.isArray(item)) return item.map((entry) => (isJsonObject(entry) ? canonicalObject(entry, subs, prefix, ignored) : entry));
  return isJsonObject(item) ? canonicalObject(item, subs, prefix, ignored) : item;
}

/**
 * A body with every attribute name in its canonical case, at every level; names no schema
 * defines are left out and listed in `ignored` (e.g. `adresses`, `emails.label`).
 */
export function canonicalAttributes(body: Json, resource: 'User' | 'Group'): { value: Json; ignored: string[] } {
  const ignored: string[] = [];
  const known = TOP_LEVEL[resource];
  const value: Json = {};
  for (const [key, item] of Object.entries(body)) {
    const attribute = known.get(key.toLowerCase());
    if (attribute === undefined) {
      ignored.push(key);
      continue;
    }
    // schemas, id, externalId, meta are kept as given.
    value[attribute.name] = (COMMON_ATTRIBUTES as readonly string[]).includes(attribute.name) ? item : canonicalValue(item, attribute, `${attribute.name}${attribute.name.startsWith('urn:') ? ':' : '.'}`, ignored);
  }
  return { value, ignored };
}

/** `Users`' known attribute names at the top level, lower case (SCIM attribute names are case-insensitive). */
export const KNOWN_USER_KEYS: ReadonlySet<string> = new Set([...COMMON_ATTRIBUTES, ...USER_ATTRIBUTES.map((a) => a.name), ENTERPRISE_SCHEMA].map((n) => n.toLowerCase()));
export const KNOWN_ENTERPRISE_KEYS: ReadonlySet<string> = new Set(ENTERPRISE_ATTRIBUTES.map((a) => a.name.toLowerCase()));
export const KNOWN_GROUP_KEYS: ReadonlySet<string> = new Set([...COMMON_ATTRIBUTES, ...GROUP_ATTRIBUTES.map((a) => a.name)].map((n) => n.toLowerCase()));
