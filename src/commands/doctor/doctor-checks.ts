import net from 'node:net';
import pg from 'pg';
import { ConfigError, soleOrg, type Config } from '../../config.ts';
import { DEFAULT_ORG, type OrgSettings } from '../../settings/orgs-file.ts';
import { errorMessage } from '../../lib/errors.ts';
import { describeUnknownVariables } from '../../lib/unknown-variables.ts';
import { describeDatabaseError, describeRedisError, isNotRedis, maskUrl } from '../../lib/infra-errors.ts';
import type { Logger } from '../../runtime/log.ts';
import { createPlatformClient, platformClientOptionsFromConfig } from '../../platform/client.ts';
import { PlatformError } from '../../platform/errors.ts';
import { pendingMigrations } from '../../warehouse/migrator.ts';
import { webhookPathOf } from '../../webhooks/receiver.ts';
import { createRedisClient, type RedisClient } from '../../lib/redis-client.ts';

/** One line of `trainsync doctor`. `refuses` marks a failure that is the configuration's (exit 2). */
export interface CheckResult {
  check: string;
  /** The organisation a per-organisation check (the platform's) is about; absent for the shared parts. */
  org?: string;
  level: 'ok' | 'warn' | 'fail';
  detail: string;
  fix?: string;
  refuses?: boolean;
}

/** A refused connection answers at once; this bounds one that does not answer at all. */
export const DOCTOR_CONNECT_TIMEOUT_MS = 1_500;

const ok = (check: string, detail: string): CheckResult => ({ check, level: 'ok', detail });
const warn = (check: string, detail: string, fix: string): CheckResult => ({ check, level: 'warn', detail, fix });
const fail = (check: string, detail: string, fix: string, refuses = false): CheckResult => ({ check, level: 'fail', detail, fix, ...(refuses ? { refuses } : {}) });

/** Slugs for one line: all of ten or fewer, else the first ten and how many more (a thousand would be a page). */
function namedFew(slugs: readonly string[]): string {
  return slugs.length <= 10 ? slugs.join(', ') : `${slugs.slice(0, 10).join(', ')} and ${slugs.length - 10} more`;
}

/** Every variable (cron lines included): one failed line per bad one, naming it. */
export function checkConfiguration(load: () => Config): { config?: Config; results: CheckResult[] } {
  let config: Config;
  try {
    config = load();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { results: error.problems.map((problem) => fail('config', problem, `set ${problem.split(':')[0]} as described, or unset it for the default`, true)) };
  }
  const unknown = config.unknownVariables ?? [];
  // "every variable" would claim the misspelt ones too: those are the warning below.
  const reads = `every ${unknown.length > 0 ? 'trainsync ' : ''}variable reads (cron lines included)`;
  const results = [ok('config', config.TRAINSYNC_ORGS_FILE ? `${reads}; ${config.orgs.length} organisation${config.orgs.length === 1 ? '' : 's'} in ${config.TRAINSYNC_ORGS_FILE}: ${namedFew(config.orgs.map((o) => o.slug))}` : reads)];
  // A misspelt variable is ignored, so its setting silently keeps the default: worth a warning, not a refusal.
  if (unknown.length > 0) {
    const renames = unknown.filter((u) => u.suggestion !== undefined).map((u) => `rename ${u.name} to ${u.suggestion}`);
    const others = unknown.filter((u) => u.suggestion === undefined).map((u) => u.name);
    const fix = [...renames, ...(others.length > 0 ? [`unset ${others.join(', ')} (or check the spelling against docs/reference.md)`] : [])].join('; ');
    results.push(warn('config', describeUnknownVariables(unknown), fix));
  }
  // With an orgs file each organisation names its own URL and key (the file's checks refused any missing one).
  if (!config.TRAINSYNC_ORGS_FILE && (!config.TRAINSYNC_API_URL || !config.TRAINSYNC_API_KEY)) {
    results.push(warn('config', 'TRAINSYNC_API_URL or TRAINSYNC_API_KEY is unset: sync, provision and seats refuse to start', 'export TRAINSYNC_API_URL=https://… TRAINSYNC_API_KEY=…'));
  }
  if (!config.TRAINSYNC_SECRET_KEY) {
    results.push(warn('config', 'TRAINSYNC_SECRET_KEY is unset: password jobs refuse to run', 'export TRAINSYNC_SECRET_KEY=$(openssl rand -hex 32)'));
  }
  return { config, results };
}

/** Reachable, version, pending migrations, the reader role. Creates nothing. */
export async function checkPostgres(config: Config): Promise<{ results: CheckResult[]; migrated: boolean }> {
  const where = maskUrl(config.DATABASE_URL);
  const pool = new pg.Pool({ connectionString: config.DATABASE_URL, max: 1, connectionTimeoutMillis: DOCTOR_CONNECT_TIMEOUT_MS });
  pool.on('error', () => undefined);
  try {
    let version: string;
    try {
      version = (await pool.query<{ server_version: string }>('show server_version')).rows[0]?.server_version ?? 'unknown';
    } catch (error) {
      if ((error as { code?: unknown }).code === '3D000') {
        return { migrated: false, results: [fail('postgres', `the database at ${where} (DATABASE_URL) does not exist`, 'run `trainsync migrate` first (it creates it)', true)] };
      }
      const described = describeDatabaseError(error, config.DATABASE_URL) ?? `cannot connect to Postgres at ${where} (DATABASE_URL): ${errorMessage(error)}`;
      return { migrated: false, results: [fail('postgres', described, 'start it (`docker compose up -d postgres redis`, or the system service), or fix DATABASE_URL')] };
    }
    const results = [ok('postgres', `reachable at ${where}, PostgreSQL ${version}`)];
    const pending = await pendingMigrations(pool);
    const migrated = pending !== 'no-database' && pending.length === 0;
    if (pending === 'no-database' || pending.length > 0) {
      const names = pending === 'no-database' ? [] : pending.length > 3 ? [pending[0], '…', pending.at(-1)] : pending;
      const list = pending === 'no-database' ? 'all' : `${pending.length} (${names.join(pending.length > 3 ? ' ' : ', ')})`;
      results.push(fail('migrations', `${list} not applied`, 'run `trainsync migrate` first', true));
    } else results.push(ok('migrations', 'every migration applied'));
    const { rows } = await pool.query<{ present: boolean }>("select exists (select 1 from pg_roles where rolname = 'trainsync_reader') as present");
    results.push(
      rows[0]?.present
        ? ok('reader role', 'trainsync_reader exists (GRANT trainsync_reader TO <bi login>)')
        : warn('reader role', 'trainsync_reader is missing: BI logins have no read-only role', 'run `trainsync migrate`'),
    );
    return { results, migrated };
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/** Reachable, version, maxmemory-policy noeviction (BullMQ needs it), persistence on or off. */
export async function checkRedis(config: Config): Promise<{ results: CheckResult[]; reachable: boolean }> {
  const where = maskUrl(config.REDIS_URL);
  // A single server, the master behind Sentinel, or a Cluster, as REDIS_URL says.
  const redis = createRedisClient(config.REDIS_URL, {
    redis: {
      lazyConnect: true,
      connectTimeout: DOCTOR_CONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      // disconnect() waits this long for a dead socket (default 2 s), holding the command's exit.
      disconnectTimeout: 200,
    },
    // One attempt: a refused connection is reported at once, not retried.
    retry: () => null,
  });
  let lastError: unknown;
  // A reply that was not Redis's protocol is the cause; the socket's close after it is not.
  redis.on('error', (error: unknown) => (lastError = isNotRedis(lastError) ? lastError : error));
  try {
    try {
      await redis.connect();
    } catch (error) {
      if (isNotRedis(lastError)) {
        const detail = describeRedisError(lastError, config.REDIS_URL)!.split('; point REDIS_URL')[0]!;
        return { reachable: false, results: [fail('redis', detail, 'point REDIS_URL at a Redis server (redis://HOST:6379), not at another service\'s port', true)] };
      }
      const described = describeRedisError(lastError ?? error, config.REDIS_URL) ?? `cannot connect to Redis at ${where} (REDIS_URL): ${errorMessage(error)}`;
      return { reachable: false, results: [fail('redis', described, 'start it (`docker compose up -d postgres redis`, or the system service), or fix REDIS_URL')] };
    }
    const server = parseInfo(await redis.info('server'));
    const results = [ok('redis', `reachable at ${where}, Redis ${server.redis_version ?? 'unknown'}`)];
    const policy = await configGet(redis, 'maxmemory-policy');
    if (policy === undefined) results.push(warn('redis memory', 'cannot read maxmemory-policy (CONFIG is disabled here)', 'make sure the server uses maxmemory-policy noeviction'));
    else if (policy === 'noeviction') results.push(ok('redis memory', 'maxmemory-policy noeviction'));
    else results.push(fail('redis memory', `maxmemory-policy is ${policy}: under memory pressure Redis would drop queued jobs`, 'set maxmemory-policy noeviction (redis.conf, or `redis-cli config set maxmemory-policy noeviction`)'));
    const persistence = parseInfo(await redis.info('persistence'));
    const save = await configGet(redis, 'save');
    const aof = persistence.aof_enabled === '1';
    const rdb = save !== undefined && save.trim() !== '';
    results.push(
      aof || rdb
        ? ok('redis persistence', `on (${[aof ? 'AOF' : '', rdb ? `RDB "${save}"` : ''].filter(Boolean).join(', ')})`)
        : warn('redis persistence', 'off: a Redis restart loses queued jobs (the worker registers the schedules again)', 'turn on appendonly yes (redis.conf) if queued jobs must survive a restart'),
    );
    return { results, reachable: true };
  } finally {
    redis.disconnect();
  }
}

/**
 * One organisation's platform: the key accepted, the page size the platform uses,
 * whether it offers the seats endpoint. Lines of an organisation other than `default`
 * start with its slug (and carry `org` in --json), so each is told apart.
 */
export async function checkPlatform(config: Config, log: Logger, org: OrgSettings = soleOrg(config)): Promise<CheckResult[]> {
  const named = org.slug !== DEFAULT_ORG || config.orgs.length > 1;
  const label = (result: CheckResult): CheckResult => (named ? { ...result, org: org.slug, detail: `[${org.slug}] ${result.detail}` } : result);
  const keyName = org.slug === DEFAULT_ORG && !config.TRAINSYNC_ORGS_FILE ? 'TRAINSYNC_API_KEY (the organisation API key)' : `the apiKey of organisation ${org.slug} in ${config.TRAINSYNC_ORGS_FILE ?? 'the orgs file'}`;
  const urlName = org.slug === DEFAULT_ORG && !config.TRAINSYNC_ORGS_FILE ? 'TRAINSYNC_API_URL' : `the apiUrl of organisation ${org.slug}`;
  if (!org.apiUrl || !org.apiKey) return [label(warn('platform', org.slug === DEFAULT_ORG ? 'not checked: TRAINSYNC_API_URL or TRAINSYNC_API_KEY is unset' : `not checked: organisation ${org.slug} has no apiUrl or key`, 'set both'))];
  const platform = createPlatformClient(platformClientOptionsFromConfig(config, org, log.child({ org: org.slug }), { retries: 0, timeoutMs: 5_000, connectTimeoutMs: DOCTOR_CONNECT_TIMEOUT_MS }));
  const results: CheckResult[] = [];
  try {
    try {
      for await (const page of platform.listCourses()) {
        const total = page.totalEntities === undefined ? '' : ` of ${page.totalEntities}`;
        results.push(ok('platform', `${org.apiUrl} accepted the key; page size seen ${page.records.length} (courses, first page${total})`));
        break;
      }
      if (results.length === 0) results.push(ok('platform', `${org.apiUrl} accepted the key (no courses yet)`));
    } catch (error) {
      const refused = error instanceof PlatformError && (error.status === 401 || error.status === 403);
      return [
        label(
          refused
            ? fail('platform', `${org.apiUrl} refused the key (${error.status} ${error.code})`, `check ${keyName}`, true)
            : fail('platform', `${org.apiUrl}: ${errorMessage(error)}`, `check ${urlName} and that the platform is reachable from here`),
        ),
      ];
    }
    try {
      const seats = await platform.getSeats();
      results.push(ok('platform seats', `offered: ${seats.seatsInUse} in use of ${seats.totalSeats}`));
    } catch (error) {
      if (error instanceof PlatformError && error.code === 'NO_UNLIMITED_PLAN') results.push(ok('platform seats', 'not applicable (NO_UNLIMITED_PLAN): no seat limit to check'));
      else results.push(warn('platform seats', `not offered (${errorMessage(error)})`, 'none needed: provisioning then skips the free-seat guard'));
    }
    return results.map(label);
  } finally {
    await platform.close();
  }
}

/**
 * The webhook receiver (one for every organisation): off without any secret; with one,
 * its port must be free or already served. Names the organisations that take webhooks
 * and their paths, and those of `orgs` that do not.
 */
export async function checkWebhook(config: Config, workerAlive: boolean, orgs: readonly OrgSettings[] = config.orgs): Promise<CheckResult> {
  const taking = orgs.filter((org) => org.webhookSecrets && org.webhookSecrets.length > 0);
  // With an orgs file each organisation names its own secret; the variable would be silently unused.
  if (config.TRAINSYNC_ORGS_FILE && config.TRAINSYNC_WEBHOOK_SECRET) {
    return warn('webhooks', `TRAINSYNC_WEBHOOK_SECRET is set but unused: with ${config.TRAINSYNC_ORGS_FILE} each organisation's secret is its webhookSecret`, 'move it to the webhookSecret of its organisation in the orgs file (by reference: {"env": "TRAINSYNC_WEBHOOK_SECRET"}), then unset the variable');
  }
  if (taking.length === 0) {
    const why = config.TRAINSYNC_ORGS_FILE ? `no webhookSecret for ${orgs.map((o) => o.slug).join(', ')} in ${config.TRAINSYNC_ORGS_FILE}` : 'TRAINSYNC_WEBHOOK_SECRET unset';
    return ok('webhooks', `off (${why}): results arrive with the nightly sync`);
  }
  const without = orgs.filter((org) => !taking.includes(org)).map((org) => org.slug);
  const paths = `POST ${taking.map((org) => webhookPathOf(org.slug)).join(', ')}${without.length > 0 ? `; no secret, so no webhooks: ${without.join(', ')}` : ''}`;
  const port = config.TRAINSYNC_WEBHOOK_PORT;
  const free = await new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, config.TRAINSYNC_WEBHOOK_HOST, () => server.close(() => resolve(true)));
  });
  if (free) return ok('webhooks', `secret set; port ${port} is free for the worker (${paths})`);
  return workerAlive
    ? ok('webhooks', `secret set; port ${port} is taken, presumably by the running worker (${paths})`)
    : fail('webhooks', `port ${port} (TRAINSYNC_WEBHOOK_PORT) is taken by another program`, 'set TRAINSYNC_WEBHOOK_PORT to a free port', true);
}

function parseInfo(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split(/\r?\n/)
      .filter((line) => line.includes(':') && !line.startsWith('#'))
      .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]),
  );
}

async function configGet(redis: RedisClient, key: string): Promise<string | undefined> {
  try {
    const reply = (await redis.config('GET', key)) as unknown;
    return Array.isArray(reply) && typeof reply[1] === 'string' ? reply[1] : undefined;
  } catch {
    return undefined;
  }
}
