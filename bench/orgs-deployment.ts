import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createBenchDatabase } from './admin-query.ts';
import { deleteBenchKeys } from './redis-cleanup.ts';

/** The variable an organisation's API key is read from in the benches' orgs files. */
export const keyVariable = (slug: string): string => `${slug.toUpperCase()}_API_KEY`;

/** What the benches of many organisations run trainsync against: an orgs file, a database of its own and a queue prefix of its own. */
export interface OrgsDeployment {
  /** The environment every trainsync process of the bench starts with (settings it adds go on top). */
  readonly env: Record<string, string>;
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly prefix: string;
  /** Drops the database, the prefix's Redis keys and the orgs file. */
  cleanUp(): Promise<void>;
}

/**
 * One orgs file naming every slug at `apiUrl` (each key in its own variable), a fresh database and a
 * fresh BullMQ prefix `bench-NAME-…`: the set-up bench/orgs-thousand.ts and bench/orgs-night.ts share.
 */
export async function orgsDeployment(name: string, organisations: ReadonlyArray<{ slug: string; apiKey: string }>, apiUrl: string, requestsPerSecond: number): Promise<OrgsDeployment> {
  const dir = await mkdtemp(path.join(tmpdir(), `trainsync-bench-${name}-`));
  const file = path.join(dir, 'orgs.json');
  await writeFile(file, JSON.stringify({ organisations: organisations.map(({ slug }) => ({ slug, name: slug, apiUrl, apiKey: { env: keyVariable(slug) }, requestsPerSecond })) }));
  const database = await createBenchDatabase();
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `bench-${name}-${randomBytes(4).toString('hex')}`;
  const env: Record<string, string> = {
    TRAINSYNC_ORGS_FILE: file,
    ...Object.fromEntries(organisations.map(({ slug, apiKey }) => [keyVariable(slug), apiKey])),
    DATABASE_URL: database.url,
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_METRICS_PORT: '0',
  };
  return {
    env,
    databaseUrl: database.url,
    redisUrl,
    prefix,
    cleanUp: async () => {
      await database.drop();
      await deleteBenchKeys(redisUrl, prefix);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
