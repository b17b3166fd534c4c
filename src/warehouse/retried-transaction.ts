import type pg from 'pg';
import { withTransaction } from './transaction.ts';

/** Deadlock and serialization failures: Postgres asks for the transaction to be run again. */
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);
const MAX_ATTEMPTS = 5;

/**
 * `withTransaction`, run again when Postgres aborts it for a deadlock or a
 * serialization failure. Concurrent windows overlap by a day, so two batches may
 * upsert the same result at once; a retry of the whole batch is always safe.
 */
export async function withRetriedTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await withTransaction(pool, fn);
    } catch (error) {
      const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
      if (!RETRYABLE_SQLSTATES.has(code) || attempt >= MAX_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt + Math.random() * 50));
    }
  }
}
