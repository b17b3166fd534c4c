import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { ORG_SLUG_RE } from './orgs-file.ts';

/**
 * Console users by reference: `name:role:hash` entries, the hash an scrypt of the password
 * (`scrypt$N$r$p$salt$key`, base64url), made by `trainsync console hash-password`. No
 * password is ever configured, stored or logged in plain text. A fourth field,
 * `name:role:hash:acme+globex`, limits the user to those organisations; without it the
 * user sees every organisation (entries written before organisations existed keep working).
 */

export const CONSOLE_ROLES = ['viewer', 'operator'] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

export interface ConsoleUser {
  name: string;
  role: ConsoleRole;
  hash: string;
  /** The organisations this user may see and act in, by slug; undefined: every organisation. */
  orgs?: readonly string[];
}

const HASH_PATTERN = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;
const NAME_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;
/** OWASP's scrypt floor (N=2^17, r=8, p=1); about 130 MB-s of work per guess. */
const DEFAULT_COST = { N: 2 ** 17, r: 8, p: 1 } as const;
const KEY_BYTES = 32;

const ENTRY_FORM = 'name:role:hash or name:role:hash:org1+org2, e.g. ana:operator:scrypt$131072$8$1$… (make the hash with `trainsync console hash-password`)';

/** Parses TRAINSYNC_CONSOLE_USERS; a string is the problem, in words. */
export function parseConsoleUsers(value: string): ConsoleUser[] | string {
  const users: ConsoleUser[] = [];
  for (const [i, entry] of value.split(',').map((e) => e.trim()).filter(Boolean).entries()) {
    const [name, role, hash, orgField, ...rest] = entry.split(':');
    const where = `entry ${i + 1}`;
    if (rest.length > 0 || hash === undefined) return `${where}: ${ENTRY_FORM}`;
    if (!NAME_PATTERN.test(name ?? '')) return `${where}: a user name of letters, digits, "_", ".", "@" or "-"`;
    if (!(CONSOLE_ROLES as readonly string[]).includes(role ?? '')) return `${where} (${name}): role viewer or operator`;
    if (!HASH_PATTERN.test(hash)) return `${where} (${name}): an scrypt hash from \`trainsync console hash-password\`, never a password`;
    if (users.some((u) => u.name === name)) return `${where}: ${name} is listed twice`;
    const orgs = orgField === undefined ? undefined : parseOrgList(orgField);
    if (typeof orgs === 'string') return `${where} (${name}): ${orgs}`;
    users.push({ name: name!, role: role as ConsoleRole, hash, ...(orgs ? { orgs } : {}) });
  }
  return users.length > 0 ? users : 'at least one name:role:hash entry';
}

/** The fourth field: organisation slugs joined by "+"; a string is the problem. */
function parseOrgList(field: string): string[] | string {
  const slugs = field.split('+').map((s) => s.trim());
  const hint = 'after the hash, organisation slugs joined by "+", e.g. acme or acme+globex (leave the field off for every organisation)';
  if (slugs.some((s) => s === '')) return hint;
  const bad = slugs.find((s) => !ORG_SLUG_RE.test(s));
  if (bad !== undefined) return `organisation "${bad}" is not a slug; ${hint}`;
  const twice = slugs.find((s, i) => slugs.indexOf(s) !== i);
  if (twice !== undefined) return `organisation ${twice} is named twice`;
  return slugs;
}

/**
 * Every user's organisations checked against those configured (TRAINSYNC_ORGS_FILE, or
 * `default`): one problem per unknown slug, naming the entry and the fix. A typo must not
 * leave a user seeing nothing, nor silently see an organisation added later under that name.
 */
export function unknownConsoleUserOrgs(users: readonly ConsoleUser[], configured: readonly string[]): string[] {
  const problems: string[] = [];
  for (const [i, user] of users.entries()) {
    for (const slug of user.orgs ?? []) {
      if (configured.includes(slug)) continue;
      problems.push(
        `TRAINSYNC_CONSOLE_USERS: entry ${i + 1} (${user.name}): organisation "${slug}" is not configured (configured: ${configured.join(', ')}); ` +
          `name only configured slugs after the hash, e.g. ${user.name}:${user.role}:scrypt$…:${configured[0] ?? 'acme'}, or leave that field off for every organisation`,
      );
    }
  }
  return problems;
}

function derive(password: string, salt: Buffer, cost: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, { ...cost, maxmem: 256 * 1024 * 1024 }, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

export async function hashConsolePassword(password: string, cost: { N: number; r: number; p: number } = DEFAULT_COST): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost);
  return `scrypt$${cost.N}$${cost.r}$${cost.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Constant-time check of a password against a stored hash. */
export async function verifyConsolePassword(password: string, hash: string): Promise<boolean> {
  const m = HASH_PATTERN.exec(hash);
  if (!m) return false;
  const expected = Buffer.from(m[5]!, 'base64url');
  const key = await derive(password, Buffer.from(m[4]!, 'base64url'), { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}
