import type pg from 'pg';
import type { PgLender } from './transaction.ts';

/**
 * Postgres advisory locks named by a text key (any process, one database). The lock
 * lives on one lent connection for the whole of `fn` and is released on it; a
 * connection lost meanwhile takes the lock with it, so a crash never leaves it held.
 */

async function holding<T>(client: pg.PoolClient, key: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } finally {
    await client.query('select pg_advisory_unlock(hashtext($1))', [key]).catch(() => undefined);
  }
}

/** Runs `fn` holding the lock, waiting for it as long as another session holds it. */
export function withAdvisoryLock<T>(lend: PgLender, key: string, fn: () => Promise<T>): Promise<T> {
  return lend(async (client) => {
    await client.query('select pg_advisory_lock(hashtext($1))', [key]);
    return holding(client, key, fn);
  });
}

/** Runs `fn` holding the lock, or gives up at once, returning `{ acquired: false }`, when another session holds it. */
export function tryAdvisoryLock<T>(lend: PgLender, key: string, fn: () => Promise<T>): Promise<{ acquired: true; value: T } | { acquired: false }> {
  return lend(async (client) => {
    const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtext($1)) as locked', [key]);
    if (!rows[0]?.locked) return { acquired: false };
    return { acquired: true, value: await holding(client, key, fn) };
  });
}
