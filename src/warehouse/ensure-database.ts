import pg from 'pg';
import type { Logger } from 'pino';
import { CONNECT_TIMEOUT_MS } from './connection-settings.ts';

const DUPLICATE_DATABASE = '42P04';
const UNIQUE_VIOLATION = '23505';

/**
 * Creates the database named in `databaseUrl` when it does not exist, by connecting
 * to the `postgres` maintenance database of the same server. Another process creating
 * it at the same moment is fine.
 */
export async function ensureDatabase(databaseUrl: string, log: Logger): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (name === '') throw new Error('DATABASE_URL names no database, e.g. postgres://postgres@127.0.0.1:5432/trainsync');
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // The server going away (a restart) makes the client emit 'error'; unheard, that ends
  // the process. The failure reaches us through connect() or the query in flight.
  client.on('error', (error) => log.debug({ err: error }, 'Postgres connection failed'));
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (rowCount) return;
    try {
      // CREATE DATABASE takes no parameters: the name is quoted as an identifier.
      await client.query(`create database ${client.escapeIdentifier(name)}`);
      log.info({ database: name }, 'database created');
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code !== DUPLICATE_DATABASE && code !== UNIQUE_VIOLATION) throw error;
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}
