import { scopedApp } from '../../src/commands/options/scoped.ts';
import { Writable } from 'node:stream';
import { DEFAULT_ORG } from '../../src/settings/orgs-file.ts';
import { allJobs } from '../../jobs/index.ts';
import type { AnyJobDefinition } from '../../src/queue/define-job.ts';
import { createApp, type App } from '../../src/runtime/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createLogger, type Logger } from '../../src/runtime/log.ts';
import type { SyncResource } from '../../src/sync/catalog-resources.ts';
import { runSync } from '../../src/sync/run-and-wait.ts';
import { syncPayloadSchema, type SyncPayload } from '../../src/sync/sync-payload.ts';
import type { JobOutcome } from '../../src/queue/wait-for-jobs.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/simulator/index.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './redis.ts';

/**
 * Everything a sync test needs, all real: a simulator on a random port, a database of
 * its own, a BullMQ prefix of its own, and an app wired exactly as the CLI wires it.
 */
export interface SyncHarness {
  sim: RunningSimulator;
  database: TestDatabase;
  prefix: string;
  env: Record<string, string>;
  config: Config;
  app: App;
  /** Every log line the app wrote, as text (to search for secrets). */
  logLines: string[];
  /** Enqueues and waits exactly as `trainsync sync` does (this process is the worker). */
  sync(resources: readonly SyncResource[], payload?: Partial<SyncPayload>): Promise<JobOutcome[]>;
  close(): Promise<void>;
}

export interface SyncHarnessOptions {
  simulator?: SimulatorOptions;
  env?: Record<string, string>;
  /** The catalog's jobs (default: jobs/index.ts's). */
  jobs?: readonly AnyJobDefinition[];
}

export async function createSyncHarness(options: SyncHarnessOptions = {}): Promise<SyncHarness> {
  const sim = await startSimulator({ seed: 7, ...options.simulator });
  const database = await createTestDatabase();
  const prefix = testPrefix();
  const env: Record<string, string> = {
    TRAINSYNC_API_URL: sim.url,
    TRAINSYNC_API_KEY: sim.apiKey,
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_REQUESTS_PER_SECOND: '2000',
    TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
    TRAINSYNC_METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    ...options.env,
  };
  const config = loadConfig(env);
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logLines.push(chunk.toString('utf8'));
      callback();
    },
  });
  const log: Logger = createLogger(config.LOG_LEVEL, sink);
  const app = await createApp(config, log, { jobs: options.jobs ?? allJobs });
  return {
    sim,
    database,
    prefix,
    env,
    config,
    app,
    logLines,
    sync: (resources, payload = {}) => runSync(scopedApp(app, DEFAULT_ORG), resources, syncPayloadSchema.parse({ trigger: 'cli', ...payload })),
    async close() {
      await app.close();
      await sim.close();
      await database.drop();
      await dropPrefix(prefix);
    },
  };
}

/** The summary a completed sync job returned, or a test failure naming the error. */
export function summaryOf(outcomes: readonly JobOutcome[], resource: string): Record<string, number | string> {
  const outcome = outcomes.find((o) => o.name === `sync-${resource}`);
  if (!outcome) throw new Error(`no job for ${resource}`);
  if (outcome.status !== 'completed') throw new Error(`sync-${resource} failed: ${outcome.error}`);
  return outcome.result as Record<string, number | string>;
}
