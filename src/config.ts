import { parseScheduleSpread, scheduleSpreadMinutes } from './settings/schedule-spread.ts';
import { CronExpressionParser } from 'cron-parser';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseIsoDay } from './lib/calendar-day.ts';
import { TrainsyncError } from './lib/errors.ts';
import { parseLookback } from './settings/lookback.ts';
import { DEFAULT_SIGNATURE_HEADER, parseWebhookSecrets } from './settings/webhook-secrets.ts';
import { parseConsoleUsers, unknownConsoleUserOrgs } from './settings/console-users.ts';
import { maskUrl } from './lib/infra-errors.ts';
import { DEFAULT_ORG, readOrgsFile, type OrgSettings } from './settings/orgs-file.ts';
import { clusterSafePrefix, parseRedisUrl } from './lib/redis-target.ts';
import { parseMaxDisable } from './settings/max-disable.ts';
import { DEFAULT_FEED_MIN_SHARE, parseFeedMinShare } from './settings/feed-min-share.ts';
import { unknownVariables, type UnknownVariable } from './lib/unknown-variables.ts';
import { parseTrustedProxies } from './settings/trusted-proxies.ts';
import { OTLP_PROTOCOL_EXPECTED, OTLP_PROTOCOLS, parseTracesExporter, TRACE_SAMPLERS, tracingSettings, type TracingSettings } from './lib/tracing/settings.ts';

/**
 * The only place environment variables are read. `loadConfig(env)` parses once and
 * returns a frozen object that is passed down; nothing else touches `process.env`.
 */

/** The fields of a cron line (5, or 6 with seconds first) and how many values each has. */
const CRON_FIELDS: ReadonlyArray<{ name: string; values: number }> = [
  { name: 'second', values: 60 },
  { name: 'minute', values: 60 },
  { name: 'hour', values: 24 },
  { name: 'day-of-month', values: 31 },
  { name: 'month', values: 12 },
  { name: 'day-of-week', values: 7 },
];

/**
 * A step larger than its field (`*\/61` minutes) is a mistake the parser lets through:
 * it picks the first value only (`*\/61` runs hourly). The problem in words, naming the
 * field and the range allowed, or undefined.
 */
export function cronStepProblem(line: string): string | undefined {
  const fields = line.trim().split(/\s+/);
  const names = fields.length === 6 ? CRON_FIELDS : CRON_FIELDS.slice(1);
  for (const [i, field] of fields.entries()) {
    const { name, values } = names[i]!;
    for (const item of field.split(',')) {
      const step = /\/(\d+)$/.exec(item)?.[1];
      if (step !== undefined && (Number(step) < 1 || Number(step) > values)) return `${name} field "${field}": step ${step} is out of range; allowed 1-${values}`;
    }
  }
  return undefined;
}

const cronLine = z
  .string()
  .trim()
  .regex(/^(\S+\s+){4,5}\S+$/, 'a cron line of 5 or 6 fields, e.g. "0 2 * * *"')
  // BullMQ's own parser, here: a bad field is refused before anything starts, naming the variable.
  .superRefine((value, ctx) => {
    try {
      CronExpressionParser.parse(value, { tz: 'UTC' });
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `a valid cron line (${error instanceof Error ? error.message : String(error)}), e.g. "0 2 * * *"` });
      return;
    }
    const step = cronStepProblem(value);
    if (step) ctx.addIssue({ code: 'custom', message: `a valid cron line (${step}), e.g. "0 2 * * *"` });
  });

const positiveInt = (example: string) =>
  z.coerce.number({ error: `a whole number, e.g. ${example}` }).int(`a whole number, e.g. ${example}`).positive(`a number above 0, e.g. ${example}`);

const secretKey = z
  .string()
  .trim()
  .transform((value, ctx) => {
    const bytes = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
    if (bytes.length !== 32) {
      ctx.addIssue({
        code: 'custom',
        message: '32 random bytes as 64 hex characters or base64, e.g. the output of `openssl rand -hex 32`',
      });
      return z.NEVER;
    }
    return bytes;
  });

/** A bearer token for SCIM: long enough not to be guessed; compared in constant time (src/http/bearer-token.ts). */
/**
 * The interface a listener binds: loopback by default, so nothing is reachable from another
 * machine until an operator says so (the container image sets 0.0.0.0, docs/operator.md).
 */
const listenHost = (): z.ZodDefault<z.ZodString> => z.string().trim().min(1, 'an interface address, e.g. 127.0.0.1, or 0.0.0.0 for every interface').default('127.0.0.1');

const scimToken = z
  .string()
  .trim()
  .min(20, 'at least 20 characters, e.g. the output of `openssl rand -hex 32`')
  .regex(/^[\x21-\x7e]+$/, 'printable characters without spaces, e.g. the output of `openssl rand -hex 32`')
  .transform((value) => Buffer.from(value, 'utf8'));

/** A value read by a parser that returns the value, or the problem in words. */
const parsedBy = <T>(parse: (value: string) => T | string) =>
  z.string().transform((value, ctx) => {
    const parsed = parse(value);
    if (typeof parsed === 'string') {
      ctx.addIssue({ code: 'custom', message: parsed });
      return z.NEVER;
    }
    return parsed;
  });

/** TRAINSYNC_METRICS_ORG_LABELS: `all` (Infinity), `none` (0) or a whole number up to 1000; a string is the problem. */
function parseMetricsOrgLabels(value: string): number | string {
  const text = value.trim().toLowerCase();
  if (text === 'all') return Number.POSITIVE_INFINITY;
  if (text === 'none') return 0;
  const n = Number(text);
  if (text !== '' && Number.isInteger(n) && n >= 0 && n <= 1000) return n;
  return 'all, none, or how many organisations keep their own org label (0 to 1000), e.g. 50';
}

/** How spans are encoded: protobuf or JSON, over HTTP. */
const otlpProtocol = () => z.string().trim().toLowerCase().pipe(z.enum(OTLP_PROTOCOLS, { error: OTLP_PROTOCOL_EXPECTED }));

/** An OTLP/HTTP endpoint: http(s), as the exporter posts to it. */
const otlpUrl = (): z.ZodString =>
  z
    .string()
    .trim()
    .refine((value) => /^https?:\/\/[^/?#]+/.test(value) && URL.canParse(value), 'an http(s) URL of an OTLP/HTTP receiver, e.g. http://otel-collector:4318');

const envSchema = z.object({
  // Several organisations (issue 20): a JSON or YAML file listing them; unset, the variables
  // below (TRAINSYNC_API_URL, TRAINSYNC_API_KEY, …) describe one organisation named `default`.
  TRAINSYNC_ORGS_FILE: z.string().trim().min(1, 'a path to a JSON or YAML file, e.g. /etc/trainsync/orgs.json').optional(),
  TRAINSYNC_API_URL: z
    .url({ error: 'an http(s) URL of the platform, e.g. https://training.example.com' })
    .refine((u) => /^https?:\/\//.test(u), 'an http(s) URL, e.g. https://training.example.com')
    .optional(),
  TRAINSYNC_API_KEY: z.string().min(1, 'the organisation API key').optional(),
  // The worker's login: not a superuser, owns no table, cannot bypass row security (docs/operator.md,
  // "The role trainsync runs as"). Unset: DEFAULT_DATABASE_URL; loadConfig fills it in.
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a Postgres URL of the worker\'s login, e.g. postgres://trainsync_worker@127.0.0.1:5432/trainsync')
    .optional(),
  // The tables' owner, for the migrations, CREATE DATABASE, the organisations' rows, the reader roles and
  // the worker's login. Unset: TRAINSYNC_LOCK_DATABASE_URL, else DATABASE_URL when that is set (one login
  // for both, as before: warned about at start), else DEFAULT_OWNER_DATABASE_URL; loadConfig fills it in.
  TRAINSYNC_OWNER_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a Postgres URL of the tables\' owner, reaching Postgres itself (not a transaction-mode pool), e.g. postgres://postgres@127.0.0.1:5432/trainsync')
    .optional(),
  // One server (redis://), a master behind Sentinel (redis+sentinel://) or a Cluster
  // (redis+cluster://); src/lib/redis-target.ts reads the forms, docs/operator.md, "Redis Sentinel and Cluster".
  REDIS_URL: z
    .string()
    .trim()
    .superRefine((value, ctx) => {
      const target = parseRedisUrl(value);
      if (typeof target === 'string') ctx.addIssue({ code: 'custom', message: target });
    })
    .default('redis://127.0.0.1:6379'),
  TRAINSYNC_REQUESTS_PER_SECOND: z.coerce
    .number({ error: 'a number of requests per second, e.g. 10' })
    .positive('a number above 0, e.g. 10')
    .max(10_000, 'at most 10000')
    .default(10),
  TRAINSYNC_SECRET_KEY: secretKey.optional(),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'one of fatal, error, warn, info, debug, trace, silent' })
    .default('info'),
  // Unset on purpose: the logger then picks pretty for a terminal and JSON otherwise.
  LOG_FORMAT: z.enum(['json', 'pretty'], { error: 'json or pretty (unset: pretty on a terminal, JSON otherwise)' }).optional(),
  // The advisory locks' session (src/warehouse/lock-session.ts): one connection per process that
  // needs a real session, so behind a transaction-mode PgBouncer it points at Postgres itself
  // or a session-mode pool. Unset: DATABASE_URL.
  TRAINSYNC_LOCK_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a Postgres URL reaching a real session (Postgres itself or a session-mode pool), e.g. postgres://postgres@127.0.0.1:5432/trainsync')
    .optional(),
  // Pooled Postgres connections per process, whatever the number of organisations and jobs:
  // jobs hold one only for a transaction (docs/operator.md, "Sizing Postgres connections").
  TRAINSYNC_PG_POOL_SIZE: positiveInt('10').min(2, 'at least 2, e.g. 10').max(200, 'at most 200, e.g. 10').default(10),
  // On a Cluster (redis+cluster://) loadConfig puts it in a hash tag, {trainsync}, unless it holds one.
  TRAINSYNC_QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:{}-]+$/, 'letters, digits, "_", ".", ":", "-", or a {hash tag}, e.g. trainsync')
    .default('trainsync'),
  TRAINSYNC_WORKER_CONCURRENCY: positiveInt('4').default(4),
  // Provisioning jobs mostly wait for a request-budget grant: enough of them keep the budget, not the workers, the bound.
  TRAINSYNC_PROVISION_CONCURRENCY: positiveInt('16').default(16),
  TRAINSYNC_RESULTS_CONCURRENCY: positiveInt('4').default(4),
  TRAINSYNC_RESULTS_LOOKBACK: z
    .string()
    .transform((value, ctx) => {
      const days = parseLookback(value);
      if (days === undefined) {
        ctx.addIssue({ code: 'custom', message: 'whole days as "7" or an ISO-8601 duration in days or weeks, e.g. "P7D" or "P2W"' });
        return z.NEVER;
      }
      return days;
    })
    .default(7),
  TRAINSYNC_RESULTS_WINDOW_DAYS: positiveInt('7').default(7),
  // A first load or full walk reads the dated results in windows of about this many pages each
  // (several at once, each one page at a time); a list of fewer than four such windows is walked whole.
  TRAINSYNC_RESULTS_WALK_WINDOW_PAGES: positiveInt('64').default(64),
  TRAINSYNC_RESULTS_EPOCH: z
    .string()
    .refine((value) => parseIsoDay(value) === value, 'a date that exists, as YYYY-MM-DD, e.g. 2015-01-01')
    .default('2015-01-01'),
  TRAINSYNC_HTTP_TIMEOUT_MS: positiveInt('30000').default(30_000),
  TRAINSYNC_CONNECT_TIMEOUT_MS: positiveInt('5000').default(5_000),
  TRAINSYNC_HTTP_RETRIES: z.coerce.number({ error: 'a whole number, e.g. 6' }).int().min(0).max(20).default(6),
  TRAINSYNC_RETRY_MAX_DELAY_MS: positiveInt('60000').default(60_000),
  // Provisioning plans against the platform's accounts: training.users serves when a users
  // sync started after trainsync's last provisioning write and at most this many minutes
  // ago; otherwise GET users is read. 0 = always read GET users.
  TRAINSYNC_PLATFORM_FRESHNESS_MINUTES: z.coerce
    .number({ error: 'a whole number of minutes, e.g. 15' })
    .int('a whole number of minutes, e.g. 15')
    .min(0, '0 or more minutes, e.g. 15')
    .max(1440, 'at most 1440 (a day), e.g. 15')
    .default(15),
  // An active employee whose access was removed on the platform outside trainsync:
  // restore (enable it again, as Entra ID provisioning does) or keep (report only).
  TRAINSYNC_DRIFT_ACCESS_REMOVED: z.enum(['restore', 'keep'], { error: 'restore or keep' }).default('restore'),
  // A full feed listing fewer rows than this share of the active employees trainsync knows is
  // refused before planning (an export cut short upstream); `provision --allow-shrink` overrides.
  TRAINSYNC_FEED_MIN_SHARE: parsedBy(parseFeedMinShare).default(DEFAULT_FEED_MIN_SHARE),
  TRAINSYNC_METRICS_PORT: z.coerce.number({ error: 'a TCP port, e.g. 9464' }).int().min(0).max(65_535).default(9464),
  TRAINSYNC_METRICS_HOST: listenHost(),
  // When set, /metrics answers only `Authorization: Bearer <token>` (401 otherwise); /healthz stays open.
  TRAINSYNC_METRICS_TOKEN: scimToken.optional(),
  // How many organisations (the orgs file's first) keep their own `org` label on every series of
  // /metrics; the rest are summed under org="_other" (a slug per series is 1,000× the series).
  TRAINSYNC_METRICS_ORG_LABELS: parsedBy(parseMetricsOrgLabels).default(50),
  TRAINSYNC_SHUTDOWN_TIMEOUT_MS: positiveInt('30000').default(30_000),
  TRAINSYNC_FAILED_JOBS_KEPT: positiveInt('1000').default(1000),
  TRAINSYNC_JOB_LOCK_MS: positiveInt('60000').default(60_000),
  TRAINSYNC_STALLED_INTERVAL_MS: positiveInt('30000').default(30_000),
  TRAINSYNC_BATCH_ROWS: positiveInt('5000').default(5_000),
  // Batches of one walk written at once, each on a connection of its own (they commit in order).
  TRAINSYNC_RESULTS_WRITERS: positiveInt('2').max(8, 'at most 8, e.g. 2').default(2),
  // How long a one-shot command (sync, status, provision…) waits for an unreachable
  // Redis before it gives up with one line naming REDIS_URL; at most a minute, so a
  // cron job or CI step never hangs on it. The worker never gives up.
  TRAINSYNC_REDIS_TIMEOUT_MS: positiveInt('30000').max(60_000, 'at most 60000, e.g. 30000').default(30_000),
  // How often the worker checks that its schedules are still in Redis (an emptied or
  // failed-over Redis loses them) and registers missing ones again.
  TRAINSYNC_SCHEDULE_CHECK_MS: positiveInt('60000').min(1_000, 'at least 1000, e.g. 60000').default(60_000),
  // Each organisation's scheduled jobs start at a stable offset inside this window, so a
  // thousand organisations do not all start at 02:00 (docs/several-organisations.md).
  TRAINSYNC_SCHEDULE_SPREAD: parsedBy(parseScheduleSpread).default(null),
  // Webhooks (src/webhooks): the receiver runs in `worker` only when a secret is set.
  TRAINSYNC_WEBHOOK_SECRET: parsedBy(parseWebhookSecrets).optional(),
  TRAINSYNC_WEBHOOK_PORT: z.coerce.number({ error: 'a TCP port, e.g. 9465' }).int().min(0).max(65_535).default(9465),
  TRAINSYNC_WEBHOOK_HOST: listenHost(),
  TRAINSYNC_WEBHOOK_SIGNATURE_HEADER: z
    .string()
    .trim()
    .regex(/^\*?[A-Za-z0-9!#$%&'+.^_`|~-]+$/, 'a header name, e.g. Acme-Signature, or *-Signature for any name ending so')
    .default(DEFAULT_SIGNATURE_HEADER),
  TRAINSYNC_WEBHOOK_MAX_BODY_BYTES: positiveInt('262144').min(1_024, 'at least 1024, e.g. 262144').default(262_144),
  // How often stored events not yet processed are queued again (after a crash, a Redis outage).
  TRAINSYNC_WEBHOOK_SWEEP_MS: positiveInt('60000').min(1_000, 'at least 1000, e.g. 60000').default(60_000),
  // Processed events are kept this long; longer than the platform's 3 days of retries, so duplicates are still recognised.
  TRAINSYNC_WEBHOOK_RETENTION_DAYS: positiveInt('30').min(4, 'at least 4 (the platform retries for 3 days), e.g. 30').default(30),
  // The operator console (src/console): off unless at least one user is configured.
  // Users are `name:role:hash` entries (role viewer or operator; hash from `trainsync console hash-password`), comma-separated;
  // `name:role:hash:acme+globex` limits a user to those organisations.
  TRAINSYNC_CONSOLE_USERS: parsedBy(parseConsoleUsers).optional(),
  TRAINSYNC_CONSOLE_PORT: z.coerce.number({ error: 'a TCP port, e.g. 9467' }).int().min(0).max(65_535).default(9467),
  TRAINSYNC_CONSOLE_HOST: listenHost(),
  // Behind a TLS-terminating proxy: its addresses (or CIDR ranges), whose X-Forwarded-For and
  // X-Forwarded-Proto are believed (cookies Secure behind TLS); any other peer is taken as it is.
  TRAINSYNC_CONSOLE_TRUST_PROXY: parsedBy(parseTrustedProxies).default(false),
  TRAINSYNC_CONSOLE_SESSION_MINUTES: positiveInt('480').max(10_080, 'at most 10080 (a week), e.g. 480').default(480),
  // SCIM 2.0 (src/scim): served by `worker` only when a bearer token is configured, by
  // value (TRAINSYNC_SCIM_TOKEN) or by reference to a file (TRAINSYNC_SCIM_TOKEN_FILE).
  TRAINSYNC_SCIM_TOKEN: scimToken.optional(),
  TRAINSYNC_SCIM_TOKEN_FILE: z
    .string()
    .trim()
    .min(1)
    .transform((path, ctx) => {
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: `a readable file holding the SCIM bearer token (${(error as NodeJS.ErrnoException).code ?? 'unreadable'}: ${path})` });
        return z.NEVER;
      }
      const parsed = scimToken.safeParse(text);
      if (!parsed.success) {
        ctx.addIssue({ code: 'custom', message: `a file whose content is ${parsed.error.issues[0]?.message ?? 'a token'}` });
        return z.NEVER;
      }
      return parsed.data;
    })
    .optional(),
  TRAINSYNC_SCIM_PORT: z.coerce.number({ error: 'a TCP port, e.g. 9466' }).int().min(0).max(65_535).default(9466),
  TRAINSYNC_SCIM_HOST: listenHost(),
  TRAINSYNC_SCIM_MAX_BODY_BYTES: positiveInt('262144').min(1_024, 'at least 1024, e.g. 262144').default(262_144),
  // SCIM requests worked on at once; past it 429 with Retry-After (identity providers back off on it).
  TRAINSYNC_SCIM_MAX_IN_FLIGHT: positiveInt('100').default(100),
  // Deactivations via SCIM allowed per sliding hour before the guard holds the rest; unset:
  // the feed's default threshold (the larger of 5 and 10% of the active employees).
  TRAINSYNC_SCIM_MAX_DISABLE: z
    .string()
    .transform((value, ctx) => {
      try {
        return parseMaxDisable(value);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'a number of employees (e.g. 25) or a percentage of the active ones (e.g. 10%)' });
        return z.NEVER;
      }
    })
    .optional(),
  // How often the worker plans SCIM changes left pending (an employee busy with earlier jobs, a crash).
  TRAINSYNC_SCIM_SWEEP_MS: positiveInt('1000').min(100, 'at least 100, e.g. 1000').default(1_000),
  // Traces (docs/operator.md, "Traces"): the standard OpenTelemetry variables; off unless OTEL_TRACES_EXPORTER=otlp
  // or an OTLP endpoint is set (src/lib/tracing/settings.ts decides). The exporter itself reads OTEL_EXPORTER_OTLP_HEADERS,
  // _TIMEOUT, _COMPRESSION and the certificate variables.
  OTEL_SDK_DISABLED: z.string().trim().optional(),
  OTEL_TRACES_EXPORTER: z
    .string()
    .transform((value, ctx) => {
      const exporter = parseTracesExporter(value);
      if (typeof exporter === 'string') return exporter;
      ctx.addIssue({ code: 'custom', message: exporter.problem });
      return z.NEVER;
    })
    .optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl().optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol().optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol().optional(),
  OTEL_SERVICE_NAME: z.string().trim().min(1).optional(),
  OTEL_RESOURCE_ATTRIBUTES: z.string().trim().regex(/^[^=,]+=[^,]*(,[^=,]+=[^,]*)*$/, 'key=value pairs, comma-separated, e.g. deployment.environment=production').optional(),
  OTEL_TRACES_SAMPLER: z.enum(TRACE_SAMPLERS, { error: `one of ${TRACE_SAMPLERS.join(', ')}` }).optional(),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number({ error: 'a share between 0 and 1, e.g. 0.25' }).min(0, 'at least 0').max(1, 'at most 1').optional(),
  OTEL_BSP_SCHEDULE_DELAY: positiveInt('5000').optional(),
});

/**
 * Schedules: `TRAINSYNC_CRON_<NAME>` for any job that declares that setting (a sync job's
 * is TRAINSYNC_CRON_<RESOURCE>, e.g. TRAINSYNC_CRON_RESULTS); the job holds the default.
 */
const CRON_PREFIX = 'TRAINSYNC_CRON_';

/** The worker's login when DATABASE_URL is unset: `trainsync migrate` creates it (a member of trainsync_app, owning nothing). */
export const DEFAULT_DATABASE_URL = 'postgres://trainsync_worker@127.0.0.1:5432/trainsync';
/** The owner's login when neither DATABASE_URL nor the owner's URL is set: a local server's superuser (trust). */
export const DEFAULT_OWNER_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/trainsync';

export type Config = Readonly<
  Omit<z.output<typeof envSchema>, 'DATABASE_URL' | 'TRAINSYNC_OWNER_DATABASE_URL'> & {
    /** The worker's login (every pool trainsync works through; row security binds it). */
    DATABASE_URL: string;
    /** The tables' owner (migrations, organisations, reader roles, the worker's login), resolved: see envSchema. */
    TRAINSYNC_OWNER_DATABASE_URL: string;
    /** Every `TRAINSYNC_CRON_*` line set, by variable name (src/queue/schedulers.ts reads it). */
    cronLines: Readonly<Record<string, string>>;
    /** LOG_LEVEL was set (not the default): on a terminal it then rules over the CLI's quiet default and -v. */
    LOG_LEVEL_GIVEN?: boolean;
    /** TRAINSYNC_SCHEDULE_SPREAD in minutes, `auto` resolved for the number of organisations. */
    scheduleSpreadMinutes: number;
    /** The organisations served: those of TRAINSYNC_ORGS_FILE, or one named `default` from the variables. */
    orgs: readonly OrgSettings[];
    /** TRAINSYNC_* variables set that trainsync does not read (typos): warned about, not refused. */
    unknownVariables?: readonly UnknownVariable[];
    /** Where traces go, when the OTEL_* variables turn them on; undefined (the default): off, and nothing of OpenTelemetry is loaded. */
    tracing?: TracingSettings | undefined;
  }
>;

/** One error for every bad key, so a person fixes them all in one go. */
export class ConfigError extends TrainsyncError {
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`, { code: 'CONFIG', retryable: false });
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/**
 * The default worker concurrency's cap, however many organisations. A job at its full
 * budget (10 requests/s, 500 results/s) costs about 2 % of a core, so 50 at once fill one
 * core: more in flight add memory and queueing inside the process, not throughput, and
 * with schedules spread over a window far fewer run at once. Jobs hold a pooled
 * connection only per transaction, so this number does not set the connections.
 */
export const MAX_DEFAULT_WORKER_CONCURRENCY = 50;
/** The default provisioning concurrency's cap: those jobs mostly wait for a budget grant, and 4 per organisation at 1,000 organisations is 4,000 waiting in one process. */
export const MAX_DEFAULT_PROVISION_CONCURRENCY = 200;

/** Variables of docker-compose.yml (the ports it publishes), read by Docker Compose, not trainsync. */
const COMPOSE_VARIABLES = ['TRAINSYNC_POSTGRES_PORT', 'TRAINSYNC_REDIS_PORT', 'TRAINSYNC_WORKER_PASSWORD'];

/** Every variable of envSchema: the settings trainsync reads (cron lines aside). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(envSchema.shape);

export interface LoadConfigOptions {
  /**
   * The TRAINSYNC_CRON_* settings the jobs declare. Given, any other TRAINSYNC_CRON_* is an
   * unknown variable (a typo: TRAINSYNC_CRON_RESLUTS), warned about, never refused; not
   * given, every TRAINSYNC_CRON_* line is kept and checked.
   */
  cronSettings?: readonly string[];
}

/**
 * The shell's COLUMNS: the terminal's width setting, not trainsync's configuration, read here
 * with the rest of the environment and handed to the output width (src/lib/text-width.ts).
 */
export function terminalColumnsSetting(env: Record<string, string | undefined> = process.env): string | undefined {
  return env.COLUMNS;
}

/** Parses the environment once; throws a ConfigError naming every bad key. */
export function loadConfig(env: Record<string, string | undefined> = process.env, options: LoadConfigOptions = {}): Config {
  const cronSettings = options.cronSettings === undefined ? undefined : new Set(options.cronSettings);
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key];
    // An empty variable means "unset": compose files and shells often export KEY= .
    if (value !== undefined && value !== '') cleaned[key] = value;
  }
  const parsed = envSchema.safeParse(cleaned);
  const cronLines: Record<string, string> = {};
  const cronProblems: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    if (!key.startsWith(CRON_PREFIX) || value === undefined || value === '') continue;
    // Not a job's setting: ignored, and named by unknownVariables (a warning, not a refusal).
    if (cronSettings !== undefined && !cronSettings.has(key)) continue;
    const line = cronLine.safeParse(value);
    if (line.success) cronLines[key] = line.data;
    else cronProblems.push(`${key}: got ${JSON.stringify(value)}; expected ${line.error.issues[0]?.message ?? 'a cron line'}`);
  }
  if (!parsed.success || cronProblems.length > 0) {
    // One line per key: a value can fail several checks, the first one says enough.
    const byKey = new Map<string, string>();
    for (const issue of parsed.error?.issues ?? []) {
      const key = String(issue.path[0] ?? '(environment)');
      if (byKey.has(key)) continue;
      const given = cleaned[key];
      const shown =
        given === undefined ? 'missing'
        : key.includes('KEY') || key.includes('SECRET') || key.includes('TOKEN') || key.includes('USERS') ? 'set but invalid'
        // A Redis URL may carry a password (and sentinel URLs a sentinelPassword): shown masked.
        : key === 'REDIS_URL' && /@|password/i.test(given) ? `got ${JSON.stringify(maskUrl(given))}`
        // A collector's URL may carry a credential (user:password@, a token in the query): not shown.
        : key.startsWith('OTEL_EXPORTER_OTLP_') && /[@?]/.test(given) ? 'set but invalid'
        : `got ${JSON.stringify(given)}`;
      byKey.set(key, `${key}: ${shown}; expected ${issue.message}`);
    }
    const problems = [...byKey.values(), ...cronProblems];
    throw new ConfigError(problems);
  }
  // The orgs file names the variables its secrets are in ({"env": "ACME_API_KEY"}): those are read too.
  const readByOrgsFile = new Set<string>();
  const tracked = new Proxy(env, {
    get(target, key) {
      if (typeof key === 'string') readByOrgsFile.add(key);
      return Reflect.get(target, key) as unknown;
    },
  });
  const orgs = organisationsOf(parsed.data, cronLines, tracked);
  // A console user limited to organisations names configured ones (checked once both are known).
  const userOrgProblems = unknownConsoleUserOrgs(parsed.data.TRAINSYNC_CONSOLE_USERS ?? [], orgs.map((o) => o.slug));
  if (userOrgProblems.length > 0) throw new ConfigError(userOrgProblems);
  const known = new Set([...CONFIG_VARIABLES, ...COMPOSE_VARIABLES, ...readByOrgsFile, ...(cronSettings ?? Object.keys(cronLines))]);
  const set = Object.keys(env).filter((key) => env[key] !== undefined && env[key] !== '');
  // Without the jobs' settings every TRAINSYNC_CRON_* line is taken as meant.
  const unknown = unknownVariables(cronSettings === undefined ? set.filter((key) => !key.startsWith(CRON_PREFIX)) : set, known);
  // Several organisations: each must find a free slot while the others run (docs/several-organisations.md, "Fairness"),
  // so the defaults grow with their number, up to a cap; a variable that is set rules.
  const scaled = {
    ...(cleaned.TRAINSYNC_WORKER_CONCURRENCY === undefined && orgs.length > 1 ? { TRAINSYNC_WORKER_CONCURRENCY: Math.min(orgs.length + 3, MAX_DEFAULT_WORKER_CONCURRENCY) } : {}),
    ...(cleaned.TRAINSYNC_PROVISION_CONCURRENCY === undefined && orgs.length > 1
      ? { TRAINSYNC_PROVISION_CONCURRENCY: Math.min(Math.max(16, 4 * orgs.length), MAX_DEFAULT_PROVISION_CONCURRENCY) }
      : {}),
  };
  // A Cluster keeps a multi-key script's keys in one slot only under a hash tag; a single server or Sentinel keeps the prefix as given.
  const TRAINSYNC_QUEUE_PREFIX = clusterSafePrefix(parsed.data.TRAINSYNC_QUEUE_PREFIX, parsed.data.REDIS_URL);
  return Object.freeze({
    ...parsed.data,
    ...scaled,
    TRAINSYNC_QUEUE_PREFIX,
    ...databaseUrls(parsed.data),
    cronLines: Object.freeze(cronLines),
    scheduleSpreadMinutes: scheduleSpreadMinutes(parsed.data.TRAINSYNC_SCHEDULE_SPREAD, orgs.length),
    LOG_LEVEL_GIVEN: cleaned.LOG_LEVEL !== undefined,
    orgs: Object.freeze(orgs),
    unknownVariables: Object.freeze(unknown),
    tracing: tracingSettings(parsed.data),
  });
}

/**
 * The worker's and the owner's URLs. Neither set: the defaults (a worker login of its own, the local
 * superuser as the owner). DATABASE_URL alone: one login for both, as before there were two (the
 * owner's work over TRAINSYNC_LOCK_DATABASE_URL when set, a real session, as before).
 */
function databaseUrls(settings: z.output<typeof envSchema>): { DATABASE_URL: string; TRAINSYNC_OWNER_DATABASE_URL: string } {
  return {
    DATABASE_URL: settings.DATABASE_URL ?? DEFAULT_DATABASE_URL,
    TRAINSYNC_OWNER_DATABASE_URL: settings.TRAINSYNC_OWNER_DATABASE_URL ?? settings.TRAINSYNC_LOCK_DATABASE_URL ?? settings.DATABASE_URL ?? DEFAULT_OWNER_DATABASE_URL,
  };
}

/** The organisations of the file, or the one the variables describe; a ConfigError names every bad entry and key. */
function organisationsOf(settings: z.output<typeof envSchema>, cronLines: Record<string, string>, env: Record<string, string | undefined>): OrgSettings[] {
  if (settings.TRAINSYNC_ORGS_FILE === undefined) {
    const token = settings.TRAINSYNC_SCIM_TOKEN_FILE ?? settings.TRAINSYNC_SCIM_TOKEN;
    return [
      {
        slug: DEFAULT_ORG,
        name: DEFAULT_ORG,
        ...(settings.TRAINSYNC_API_URL ? { apiUrl: settings.TRAINSYNC_API_URL } : {}),
        ...(settings.TRAINSYNC_API_KEY ? { apiKey: settings.TRAINSYNC_API_KEY } : {}),
        requestsPerSecond: settings.TRAINSYNC_REQUESTS_PER_SECOND,
        feedMinShare: settings.TRAINSYNC_FEED_MIN_SHARE,
        cronLines: Object.freeze({ ...cronLines }),
        ...(settings.TRAINSYNC_WEBHOOK_SECRET ? { webhookSecrets: settings.TRAINSYNC_WEBHOOK_SECRET } : {}),
        ...(token ? { scimToken: token } : {}),
      },
    ];
  }
  const read = readOrgsFile(settings.TRAINSYNC_ORGS_FILE, {
    env,
    cronLines,
    defaultRequestsPerSecond: settings.TRAINSYNC_REQUESTS_PER_SECOND,
    defaultFeedMinShare: settings.TRAINSYNC_FEED_MIN_SHARE,
    checkCron: (value) => {
      const line = cronLine.safeParse(value);
      return line.success ? undefined : (line.error.issues[0]?.message ?? 'a cron line');
    },
  });
  if (read.length > 0 && typeof read[0] === 'string') throw new ConfigError(read as string[]);
  return read as OrgSettings[];
}

/** The only organisation, or a ConfigError when the orgs file lists several (the caller must choose). */
export function soleOrg(config: Pick<Config, 'orgs'>): OrgSettings {
  if (config.orgs.length !== 1) throw new ConfigError([`TRAINSYNC_ORGS_FILE: lists ${config.orgs.length} organisations (${config.orgs.map((o) => o.slug).join(', ')}); name one with --org SLUG`]);
  return config.orgs[0]!;
}

/** Each organisation list's entries by slug, made once per list: a worker of a thousand organisations looks one up several times a job. */
const orgsBySlug = new WeakMap<readonly OrgSettings[], Map<string, OrgSettings>>();

/** The organisation of this slug, or a ConfigError naming the configured ones. */
export function orgOf(config: Pick<Config, 'orgs'>, slug: string): OrgSettings {
  // Only a frozen list (loadConfig's) is indexed: one that may still change is searched.
  if (!Object.isFrozen(config.orgs)) return found(config, config.orgs.find((o) => o.slug === slug), slug);
  let bySlug = orgsBySlug.get(config.orgs);
  if (bySlug === undefined) {
    bySlug = new Map(config.orgs.map((o) => [o.slug, o]));
    orgsBySlug.set(config.orgs, bySlug);
  }
  return found(config, bySlug.get(slug), slug);
}

function found(config: Pick<Config, 'orgs'>, org: OrgSettings | undefined, slug: string): OrgSettings {
  if (!org) throw new ConfigError([`organisation "${slug}": not configured; configured: ${config.orgs.map((o) => o.slug).join(', ')}`]);
  return org;
}

/** An organisation's platform origin and key, or a ConfigError saying which to set. */
export function requireOrgPlatform(org: OrgSettings): { apiUrl: string; apiKey: string } {
  const problems: string[] = [];
  if (org.slug === DEFAULT_ORG && org.name === DEFAULT_ORG) {
    if (!org.apiUrl) problems.push('TRAINSYNC_API_URL: missing; expected the platform base URL, e.g. https://training.example.com');
    if (!org.apiKey) problems.push("TRAINSYNC_API_KEY: missing; expected the organisation's API key");
  } else {
    if (!org.apiUrl) problems.push(`TRAINSYNC_ORGS_FILE: organisation ${org.slug}: apiUrl: missing`);
    if (!org.apiKey) problems.push(`TRAINSYNC_ORGS_FILE: organisation ${org.slug}: apiKey: missing`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { apiUrl: org.apiUrl!, apiKey: org.apiKey! };
}

/** The platform origin and key of the only organisation, or a ConfigError saying which to set. */
export function requirePlatform(config: Config, org: OrgSettings = soleOrg(config)): { apiUrl: string; apiKey: string } {
  return requireOrgPlatform(org);
}

/** The secret key, or a ConfigError saying how to make one. */
export function requireSecretKey(config: Config): Buffer {
  if (!config.TRAINSYNC_SECRET_KEY) {
    throw new ConfigError(['TRAINSYNC_SECRET_KEY: missing; expected 32 random bytes as hex, e.g. `export TRAINSYNC_SECRET_KEY=$(openssl rand -hex 32)`']);
  }
  return config.TRAINSYNC_SECRET_KEY;
}
