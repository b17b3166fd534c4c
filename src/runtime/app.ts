import { limitHeapGrowth } from './heap-growth.ts';
import type { Config } from '../config.ts';
import { orgOf, soleOrg } from '../config.ts';
import type { OrgSettings } from '../settings/orgs-file.ts';
import { registerOrganisations } from '../warehouse/organisations.ts';
import { ensureOrgReaders } from '../warehouse/org-readers.ts';
import type { Services } from '../queue/job-context.ts';
import type { Logger } from './log.ts';
import { createMetrics, observeJobs, type Metrics } from './metrics.ts';
import { stateReader } from './state-metrics.ts';
import { createPlatformClient, platformClientOptionsFromConfig } from '../platform/client.ts';
import type { PlatformClient } from '../platform/types.ts';
import { createJobCatalog, type JobCatalog } from '../queue/catalog.ts';
import type { AnyJobDefinition } from '../queue/define-job.ts';
import type { RedisMode } from '../queue/connection.ts';
import { createJobQueue, type JobQueue } from '../queue/job-queue.ts';
import { QUEUE_NAMES, type QueueName } from '../queue/names.ts';
import { ensureDatabase } from '../warehouse/ensure-database.ts';
import { migrate, requireMigrated } from '../warehouse/migrator.ts';
import { maskUrl, toInfrastructureError } from '../lib/infra-errors.ts';
import { connectingLine, withConnectingNotice } from '../lib/connecting-notice.ts';
import { APP_ROLE, CONNECT_TIMEOUT_MS } from '../warehouse/connection-settings.ts';
import { createDb, createOwnerPool, createPool } from '../warehouse/pool.ts';
import { checkAppRole, ownerRefusal, warnIfUnbound } from '../warehouse/app-role.ts';
import { ensureWorkerLogin } from '../warehouse/worker-login.ts';
import { createScopes, type OrgScopes } from '../warehouse/scope.ts';
import { createLockSession, type AdvisoryLocks } from '../warehouse/lock-session.ts';
import { startTracing, type Tracing } from '../lib/tracing/start.ts';

/**
 * The long-lived parts one process shares between its commands and jobs. Commands
 * take what they need from it; domain code is handed narrow parts, never the App.
 */
export interface App {
  config: Config;
  log: Logger;
  /**
   * The way to organisation data: `scopes.scope(org)` for one organisation's work,
   * `scopes.acrossOrganisations(reason, fn)` for work over all of them. The connections
   * run as trainsync_app, which row-level security binds (src/warehouse/scope.ts).
   */
  scopes: OrgScopes;
  /** Every advisory lock of this process, on one session of its own (TRAINSYNC_LOCK_DATABASE_URL). */
  locks: AdvisoryLocks;
  metrics: Metrics;
  queue: JobQueue;
  catalog: JobCatalog;
  /** An organisation's client, built on first use (`status` and `migrate` need no platform key); default: the only organisation. */
  platform(org?: string): PlatformClient;
  /** What a job of this organisation may use (its platform client built on first use); default: the only organisation. */
  services(org?: string): Services;
  close(): Promise<void>;
}

export interface CreateAppOptions {
  /** Every job this process knows (jobs/index.ts); the catalog refuses a gap or a double. */
  jobs: readonly AnyJobDefinition[];
  /** Apply migrations first (under the migrator's advisory lock, so safe from many processes). */
  migrate?: boolean;
  /**
   * A command that only reads (`status`): never creates the database nor migrates it;
   * a missing or unmigrated one is refused with "run `trainsync migrate` first".
   */
  readOnly?: boolean;
  /**
   * `one-shot` (default, commands): Redis must answer PING within TRAINSYNC_REDIS_TIMEOUT_MS
   * before anything starts, and connections give up after that long unreachable, so the
   * command ends with one line naming REDIS_URL. `persistent` (the worker): retry forever.
   */
  redis?: RedisMode;
  /**
   * false: connect as the owner, with handles that set no scope (row-level security does
   * not bind trainsync): only for the benchmark that measures what it costs. Default true.
   */
  rowSecurity?: boolean;
}

/** How long the metrics scrape waits for queue counts before it leaves them out (Redis slow or down). */
const QUEUE_COUNTS_TIMEOUT_MS = 800;

/** Composition root of one process: config in, connected parts out. */
export async function createApp(config: Config, log: Logger, options: CreateAppOptions): Promise<App> {
  limitHeapGrowth();
  const catalog = createJobCatalog(options.jobs);
  const lockUrl = config.TRAINSYNC_LOCK_DATABASE_URL ?? config.DATABASE_URL;
  const ownerUrl = config.TRAINSYNC_OWNER_DATABASE_URL;
  // The first contact with Postgres: slow, it says so after a second; timed out, it names the setting.
  const firstContact = <T>(url: string, setting: string, work: () => Promise<T>): Promise<T> =>
    withConnectingNotice(work, () => log.warn({ database: maskUrl(url) }, connectingLine(maskUrl(url), CONNECT_TIMEOUT_MS, 'Postgres', setting))).catch((error: unknown) => {
      throw toInfrastructureError(error, { DATABASE_URL: url, REDIS_URL: config.REDIS_URL }, 'postgres') ?? error;
    });
  const ownerSetting = ownerUrl === config.DATABASE_URL ? 'DATABASE_URL' : 'TRAINSYNC_OWNER_DATABASE_URL';
  // Over the owner's URL (Postgres itself: a pooler in front of DATABASE_URL may not serve the
  // `postgres` maintenance database that CREATE DATABASE is run from), as the owner (CREATEDB).
  if (!options.readOnly) await firstContact(ownerUrl, ownerSetting, () => ensureDatabase(ownerUrl, log));
  // The owner's work first, on a pool of its own that ends with it: migrations (under a
  // session lock, so over a real session), the organisations' rows, the reader roles, the
  // worker's login. Everything after runs as the worker's login, taking trainsync_app. A
  // command that only reads needs no owner: it checks the migrations over DATABASE_URL.
  const owner = options.readOnly ? createPool(config.DATABASE_URL, { max: 1, log, applicationName: 'trainsync-check' }) : createOwnerPool(ownerUrl, { log });
  try {
    if (options.readOnly) await firstContact(config.DATABASE_URL, 'DATABASE_URL', () => requireMigrated(owner, maskUrl(config.DATABASE_URL)));
    else if (options.migrate) await migrate(owner, log);
    if (!options.readOnly) {
      await registerOrganisations(createDb(owner), config.orgs);
      await ensureWorkerLogin(owner, config.DATABASE_URL, log);
    }
    if (options.migrate) await ensureOrgReaders(owner, config.orgs.flatMap((org) => (org.readerRole ? [{ slug: org.slug, readerRole: org.readerRole }] : [])));
  } catch (error) {
    throw ownerRefusal(error, config) ?? error;
  } finally {
    await owner.end().catch(() => undefined);
  }
  const rowSecurity = options.rowSecurity ?? true;
  // Bounded whatever the organisations and the concurrency: a job holds a connection only
  // for a transaction, and its lock lives on the lock session (docs/operator.md,
  // "Sizing Postgres connections"). Connections per process: this pool + 1. Without row
  // security (the benchmark's baseline only) it is the owner's, which no policy binds.
  const pool = rowSecurity
    ? createPool(config.DATABASE_URL, { max: config.TRAINSYNC_PG_POOL_SIZE, log, role: APP_ROLE })
    : createPool(ownerUrl, { max: config.TRAINSYNC_PG_POOL_SIZE, log });
  try {
    if (rowSecurity) {
      // The first contact over trainsync's own login, when the owner's URL is another.
      await firstContact(config.DATABASE_URL, 'DATABASE_URL', () => checkAppRole(pool, config.DATABASE_URL));
      await warnIfUnbound(pool, log);
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  const scopes = createScopes(pool, log, { rowSecurity });
  const locks = createLockSession(lockUrl, { log });
  // One client per organisation: its own key, and its own request budget in Redis.
  const platforms = new Map<string, PlatformClient>();
  const orgFor = (slug: string | undefined): OrgSettings => (slug === undefined ? soleOrg(config) : orgOf(config, slug));
  const getPlatform = (slug?: string): PlatformClient => {
    const org = orgFor(slug);
    let platform = platforms.get(org.slug);
    if (!platform) {
      platform = createPlatformClient(platformClientOptionsFromConfig(config, org, log.child({ org: org.slug }), {
        onRequest: (event) => metrics.observeRequest(event, org.slug),
        // A command fails at once when nothing ever answered at the URL (a wrong setting); the
        // worker retries it as an outage, so a platform down as it starts loses no queued change.
        ...(options.redis === 'persistent' ? { urlSetting: undefined } : {}),
      }));
      platforms.set(org.slug, platform);
    }
    return platform;
  };
  // Called when a job starts, by when `queue` below exists.
  const services = (slug?: string): Services => {
    const org = orgFor(slug);
    const scope = scopes.scope(org.slug);
    return { config, org, scope, locks, platform: getPlatform(org.slug), actions: queue };
  };
  // Queue counts are read at scrape time, by when `queue` below exists.
  // Skipped while Redis is down, and given up after a moment, so /metrics always answers.
  const metrics = createMetrics(async () => {
    if (!queue.redis.isReady) return [];
    let timer: NodeJS.Timeout | undefined;
    // The workers connected: CLIENT LIST, which some managed Redis refuse; then left out, the counts kept.
    const workersOf = (name: QueueName): Promise<number | undefined> => queue.workers(name).catch(() => undefined);
    const counts = Promise.all(QUEUE_NAMES.map(async (name) => {
      const [jobs, workers] = await Promise.all([queue.counts(name), workersOf(name)]);
      return { queue: name, counts: jobs, ...(workers === undefined ? {} : { workers }) };
    }));
    counts.catch(() => undefined);
    const timeout = new Promise<[]>((resolve) => (timer = setTimeout(resolve, QUEUE_COUNTS_TIMEOUT_MS, [])));
    try {
      return await Promise.race([counts, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }, {
    orgs: config.orgs.map((org) => org.slug),
    orgLabels: config.TRAINSYNC_METRICS_ORG_LABELS,
    budgets: config.orgs.map((org) => ({ org: org.slug, requestsPerSecond: org.requestsPerSecond })),
    readState: stateReader(scopes, catalog, config.orgs.map((org) => org.slug)),
  });
  const redisMode = options.redis ?? 'one-shot';
  // Off unless the OTEL_* variables ask (docs/operator.md, "Traces"): then the SDK is loaded, and BullMQ carries each trace through Redis.
  let tracing: Tracing | undefined;
  try {
    tracing = config.tracing ? await startTracing(config.tracing, log) : undefined;
  } catch (error) {
    await pool.end().catch(() => undefined);
    await locks.close().catch(() => undefined);
    throw error;
  }
  const queue = createJobQueue(config, { catalog, services, log, onFinished: observeJobs(metrics, catalog) }, { redis: redisMode, telemetry: tracing?.telemetry });
  if (redisMode === 'one-shot') {
    // Fail now, with one line naming REDIS_URL, rather than hang at the first queue operation.
    try {
      await queue.redis.check(config.TRAINSYNC_REDIS_TIMEOUT_MS);
    } catch (error) {
      await queue.close();
      // The pool itself: Kysely ends it only if it ever lent a connection from it.
      await pool.end().catch(() => undefined);
      await tracing?.close();
      throw error;
    }
  }
  return {
    config,
    log,
    scopes,
    locks,
    metrics,
    queue,
    catalog,
    platform: getPlatform,
    services,
    async close() {
      await Promise.all([...platforms.values()].map((platform) => platform.close()));
      await queue.close();
      await pool.end();
      await locks.close();
      // Last: the spans of everything closed above are sent before the process goes.
      await tracing?.close();
    },
  };
}
