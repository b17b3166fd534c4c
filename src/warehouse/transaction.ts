import { Kysely, PostgresDialect, type PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import type { Database } from './database.ts';
import { ATTR } from '../lib/tracing/attributes.ts';
import { inSpan } from '../lib/tracing/spans.ts';

/**
 * Lends a pooled pg client for the length of `fn`: COPY streams need the raw client,
 * which Kysely does not expose. The only way storage code reaches a raw connection.
 */
export type PgLender = <T>(fn: (client: pg.PoolClient) => Promise<T>) => Promise<T>;

/**
 * A lender over a pool. While lent, the client has an 'error' listener: pg's pool
 * listens only to idle clients, and a checked-out one losing its server (a restart,
 * a failover) would otherwise raise an unhandled 'error' and end the process. The
 * failure still reaches the caller through the query it was running. A client whose
 * work threw is destroyed, not reused: after a lost server or a failed rollback it
 * may be unusable, and a fresh connection costs a few milliseconds.
 */
export function lendFrom(pool: pg.Pool): PgLender {
  return async (fn) => {
    const client = await pool.connect();
    const ignore = (): void => undefined;
    client.on('error', ignore);
    let failed = false;
    try {
      return await fn(client);
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      client.off('error', ignore);
      client.release(failed);
    }
  };
}

/** One open transaction: the raw client (for COPY) and Kysely on the same connection. */
export interface Tx {
  client: pg.PoolClient;
  db: Kysely<Database>;
}

/** Kysely bound to one client, so typed queries run inside the caller's transaction. */
export function kyselyOn(client: pg.PoolClient): Kysely<Database> {
  const lent = { query: client.query.bind(client), release: () => undefined } as unknown as PostgresPoolClient;
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: { connect: async () => lent, end: async () => undefined } }) });
}

/**
 * Runs `fn` inside BEGIN/COMMIT on `client` and returns its value; rolls back and
 * rethrows when it throws. The one place a transaction is opened (the migrator uses
 * it directly on the client it holds its lock on).
 */
export async function inTransaction<T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<T> {
  await client.query('begin');
  try {
    const value = await fn();
    // Traces on: the commit is a span of its own (how long Postgres took to make the rows durable).
    await inSpan('COMMIT', { [ATTR.dbSystem]: 'postgresql', [ATTR.dbOperation]: 'COMMIT' }, () => client.query('commit'), 'client');
    return value;
  } catch (error) {
    // A rollback that fails (the connection is gone) changes nothing: the lender destroys the client.
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}

/**
 * Runs `fn` in a transaction on one lent connection and returns its value. Loaders
 * and sync state share the transaction, so rows and their checkpoint commit together
 * or not at all.
 */
export async function withTransaction<T>(lend: PgLender, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return lend((client) => inTransaction(client, () => fn({ client, db: kyselyOn(client) })));
}

/** Deadlock and serialization failures: Postgres asks for the transaction to be run again. */
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);
const MAX_ATTEMPTS = 5;

/** Runs `attempt` again (with a short, growing pause) while Postgres aborts it for a deadlock or a serialization failure. */
async function retryingAborts<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    try {
      return await attempt();
    } catch (error) {
      const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
      if (!RETRYABLE_SQLSTATES.has(code) || tries >= MAX_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * tries + Math.random() * 50));
    }
  }
}

/**
 * `withTransaction`, run again when Postgres aborts it for a deadlock or a
 * serialization failure. Concurrent windows overlap by a day, so two batches may
 * upsert the same result at once; a retry of the whole batch is always safe.
 */
export function withRetriedTransaction<T>(lend: PgLender, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return retryingAborts(() => withTransaction(lend, fn));
}

/** `inTransaction` on a client the caller holds (the migrator's, under its lock), run again the same way. */
export function inRetriedTransaction<T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<T> {
  return retryingAborts(() => inTransaction(client, fn));
}
