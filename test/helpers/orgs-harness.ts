import { owner } from './owner.ts';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { allJobs } from '../../jobs/index.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { PROVISION_QUEUE } from '../../src/queue/names.ts';
import type { WorkerHandle } from '../../src/queue/worker.ts';
import { createApp, type App } from '../../src/runtime/app.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { startScimService, type ScimService } from '../../src/scim/service.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { createTestDatabase, withAdmin, type TestDatabase } from './db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './redis.ts';

/**
 * Two organisations, `north` and `south`, in one warehouse: each its own simulator (its own
 * key) with the SAME seed, so both list the same user GUIDs, e-mails and employee ids (the
 * overlap the per-organisation keys must survive); an orgs file naming them, each with a SCIM
 * token; an app wired as the CLI wires it, a worker on the provision queue and the SCIM endpoint.
 */

export type OrgSlug = 'north' | 'south';

export interface TwoOrgHarness {
  sims: Record<OrgSlug, RunningSimulator>;
  database: TestDatabase;
  /** The environment the app was configured with (give it to a CLI child). */
  env: Record<string, string>;
  config: Config;
  app: App;
  worker: WorkerHandle;
  scim: ScimService;
  /** Each organisation's SCIM bearer token. */
  tokens: Record<OrgSlug, string>;
  /** North's reader role (per-organisation row-level security), unique to this run. */
  northReader: string;
  close(): Promise<void>;
}

export interface TwoOrgHarnessOptions {
  env?: Record<string, string>;
  /** Extra keys of each organisation's entry in the orgs file (feedProfile, cron…). */
  entries?: Partial<Record<OrgSlug, Record<string, unknown>>>;
}

export async function createTwoOrgHarness(options: TwoOrgHarnessOptions = {}): Promise<TwoOrgHarness> {
  const sizes = { users: 12, groups: 3, courses: 3, results: 5 };
  const sims = {
    north: await startSimulator({ seed: 7, apiKey: `north-${randomBytes(8).toString('hex')}`, sizes }),
    south: await startSimulator({ seed: 7, apiKey: `south-${randomBytes(8).toString('hex')}`, sizes }),
  };
  const database = await createTestDatabase();
  const prefix = testPrefix();
  const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-orgs-'));
  // Roles are cluster-wide: a name of this run's, dropped at the end.
  const northReader = `trainsync_test_north_${randomBytes(4).toString('hex')}`;
  const tokens = { north: randomBytes(24).toString('hex'), south: randomBytes(24).toString('hex') };
  const orgsFile = path.join(dir, 'orgs.json');
  writeFileSync(
    orgsFile,
    JSON.stringify({
      organisations: [
        { slug: 'north', name: 'North', apiUrl: sims.north.url, apiKey: { env: 'NORTH_KEY' }, scimToken: { env: 'NORTH_SCIM' }, reader: northReader, ...options.entries?.north },
        { slug: 'south', name: 'South', apiUrl: sims.south.url, apiKey: { env: 'SOUTH_KEY' }, scimToken: { env: 'SOUTH_SCIM' }, ...options.entries?.south },
      ],
    }),
  );
  const env: Record<string, string> = {
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_ORGS_FILE: orgsFile,
    NORTH_KEY: sims.north.apiKey,
    SOUTH_KEY: sims.south.apiKey,
    NORTH_SCIM: tokens.north,
    SOUTH_SCIM: tokens.south,
    TRAINSYNC_REQUESTS_PER_SECOND: '2000',
    TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_SCIM_PORT: '0',
    TRAINSYNC_SCIM_HOST: '127.0.0.1',
    TRAINSYNC_SCIM_SWEEP_MS: '200',
    LOG_LEVEL: 'warn',
    ...options.env,
  };
  const config = loadConfig(env);
  const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const app = await createApp(config, createLogger(config.LOG_LEVEL, sink), { jobs: allJobs, migrate: true });
  const worker = await app.queue.startWorkers([PROVISION_QUEUE]);
  const scim = await startScimService({ config, scopes: app.scopes, locks: app.locks, queue: app.queue, platform: app.platform, log: app.log });
  if (!scim) throw new Error('the SCIM service did not start');
  return {
    sims,
    database,
    env,
    config,
    app,
    worker,
    scim,
    tokens,
    northReader,
    async close() {
      await scim.close();
      await worker.close();
      await app.close();
      await sims.north.close();
      await sims.south.close();
      await database.drop();
      await dropPrefix(prefix);
      rmSync(dir, { recursive: true, force: true });
      // The reader role owns nothing once its database is gone.
      await withAdmin((admin) => admin.query(`drop role if exists ${northReader}`)).catch(() => undefined);
    },
  };
}
