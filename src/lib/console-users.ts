import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Console users by reference: `name:role:hash` entries, the hash an scrypt of the password
 * (`scrypt$N$r$p$salt$key`, base64url), made by `trainsync console hash-password`. No
 * password is ever configured, stored or logged in plain text.
 */

export const CONSOLE_ROLES = ['viewer', 'operator'] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

export interface ConsoleUser {
  name: string;
  role: ConsoleRole;
  hash: string;
}

const HASH_PATTERN = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;
const NAME_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;
/** OWASP's scrypt floor (N=2^17, r=8, p=1); about 130 MB-s of work per guess. */
const DEFAULT_COST = { N: 2 ** 17, r: 8, p: 1 } as const;
const KEY_BYTES = 32;

/** Parses TRAINSYNC_CONSOLE_USERS; a string is the problem, in words. */
export function parseConsoleUsers(value: string): ConsoleUser[] | string {
  const users: ConsoleUser[] = [];
  for (const [i, entry] of value.split(',').map((e) => e.trim()).filter(Boolean).entries()) {
    const [name, role, hash, ...rest] = entry.split(':');
    const where = `entry ${i + 1}`;
    if (rest.length > 0 || hash === undefined) return `${where}: name:role:hash, e.g. ana:operator:scrypt$131072$8$1$… (make the hash with \`trainsync console hash-password\`)`;
    if (!NAME_PATTERN.test(name ?? '')) return `${where}: a user name of letters, digits, "_", ".", "@" or "-"`;
    if (!(CONSOLE_ROLES as readonly string[]).includes(role ?? '')) return `${where} (${name}): role viewer or operator`;
    if (!HASH_PATTERN.test(hash)) return `${where} (${name}): an scrypt hash from \`trainsync console hash-password\`, never a password`;
    if (users.some((u) => u.name === name)) return `${where}: ${name} is listed twice`;
    users.push({ name: name!, role: role as ConsoleRole, hash });
  }
  return users.length > 0 ? users : 'at least one name:role:hash entry';
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
