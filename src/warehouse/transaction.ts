import type pg from 'pg';

/**
 * Runs `fn` inside BEGIN/COMMIT on one pooled connection and returns its value;
 * rolls back and rethrows when it throws. Loaders and sync state take this client,
 * so rows and their checkpoint commit together or not at all.
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('begin');
    const value = await fn(client);
    await client.query('commit');
    return value;
  } catch (error) {
    try {
      await client.query('rollback');
    } catch (rollbackError) {
      // The connection is unusable (e.g. terminated): do not hand it back to the pool.
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw error;
  } finally {
    client.release(broken);
  }
}
