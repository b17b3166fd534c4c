import { Redis } from 'ioredis';
import pg from 'pg';
import { dropStaleTestDatabases, ensureTemplateDatabase } from './db.ts';

/**
 * Fails fast, with the command to run, when Postgres or Redis is not up; then builds
 * (or reuses) the migrated template database that createTestDatabase copies.
 */
export async function setup(): Promise<void> {
  const pgUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const client = new pg.Client({ connectionString: pgUrl });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (error) {
    throw new Error(`Postgres is not reachable at ${pgUrl} (${String(error)}). Start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`);
  } finally {
    await client.end().catch(() => undefined);
  }
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(`Redis is not reachable (${String(error)}). Start it: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no`);
  } finally {
    redis.disconnect();
  }
  const template = await ensureTemplateDatabase();
  await dropStaleTestDatabases(template);
}
