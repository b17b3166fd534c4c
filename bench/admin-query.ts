import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** One statement on the server's maintenance database (create or drop a bench database). */
export async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * A database of the bench's own beside DATABASE_URL's (default the local server): its URL,
 * and `drop()` to remove it at the end.
 */
export async function createBenchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/trainsync';
  const admin = new URL(base);
  admin.pathname = '/postgres';
  const name = `trainsync_bench_${randomBytes(5).toString('hex')}`;
  const url = new URL(base);
  url.pathname = `/${name}`;
  await adminQuery(admin.toString(), `create database ${name}`);
  return { url: url.toString(), drop: () => adminQuery(admin.toString(), `drop database if exists ${name} with (force)`) };
}
