import { createHash, randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { ConsoleRole } from '../settings/console-users.ts';
import type { Database } from '../warehouse/database.ts';

/**
 * Console sessions in Postgres: the cookie holds 32 random bytes, the table only their
 * SHA-256, so neither a database copy nor a log line lets anyone in. Expiry is checked
 * by the server on every request (the cookie's own Max-Age is only a courtesy).
 */

type Db = Kysely<Database>;

/** The cookie that carries a session's token. */
export const SESSION_COOKIE = 'trainsync_console';

export interface Session {
  username: string;
  role: ConsoleRole;
  expiresAt: Date;
  /** The organisation chosen in the selector; null: all of them. */
  org: string | null;
}

const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');

export async function createSession(db: Db, user: { name: string; role: ConsoleRole }, minutes: number): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await sql`insert into trainsync.console_sessions (token_hash, username, role, expires_at)
            values (${hashOf(token)}, ${user.name}, ${user.role}, now() + make_interval(mins => ${minutes}))`.execute(db);
  // Expired rows go away as new sessions start.
  await sql`delete from trainsync.console_sessions where expires_at < now() - interval '1 day'`.execute(db);
  return token;
}

/** The live session of a cookie token, or undefined (unknown, expired, or its user no longer configured). */
export async function findSession(db: Db, token: string | undefined): Promise<Session | undefined> {
  if (!token || token.length > 100) return undefined;
  const { rows } = await sql<{ username: string; role: ConsoleRole; expires_at: Date; org: string | null }>`
    select username, role, expires_at, org from trainsync.console_sessions where token_hash = ${hashOf(token)} and expires_at > now()`.execute(db);
  const row = rows[0];
  return row ? { username: row.username, role: row.role, expiresAt: row.expires_at, org: row.org } : undefined;
}

/** Keeps the organisation a session looks at (null: all); the caller checks it is configured. */
export async function setSessionOrg(db: Db, token: string | undefined, org: string | null): Promise<void> {
  if (token) await sql`update trainsync.console_sessions set org = ${org} where token_hash = ${hashOf(token)} and expires_at > now()`.execute(db);
}

export async function endSession(db: Db, token: string | undefined): Promise<void> {
  if (token) await sql`delete from trainsync.console_sessions where token_hash = ${hashOf(token)}`.execute(db);
}
