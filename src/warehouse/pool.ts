import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { CONNECT_TIMEOUT_MS } from './connection-settings.ts';
import type { Database } from './database.ts';

const INT8_OID = 20;

/**
 * int8 (bigserial ids, count(*)) as a JS number instead of pg's default string. Our
 * int8 values (run ids, row counts) stay far below 2^53; numeric stays a string.
 */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
};

export interface PoolOptions {
  /** Most connections held at once; default 10 (pg's default). */
  max?: number;
  /** Where errors of idle connections are reported (e.g. a server restart). */
  log?: Logger;
  /** Shown in pg_stat_activity; default 'trainsync'. */
  applicationName?: string;
  /**
   * The role every connection takes once it opens (and each scoped transaction again): trainsync's own pool runs
   * as `trainsync_app` (APP_ROLE), which row-level security binds; the owner's pool
   * (createOwnerPool) takes none.
   */
  role?: string;
  /**
   * The owner's pool (migrations, the organisations' rows, the reader roles): its sessions set
   * trainsync.all_orgs = on. Row security is forced on every table with an organisation, so an
   * owner that is not a superuser (nor BYPASSRLS) sees rows through trainsync_app's policy, of
   * which migrate makes it a member; a superuser is not bound at all. Never the worker's pool.
   */
  owner?: boolean;
}

/** What the owner's sessions set (PoolOptions.owner): a constant, never a value. */
const OWNER_SETTINGS = "; set trainsync.all_orgs = 'on'";

/** The owner's pool: a few connections, sessions that see every organisation (PoolOptions.owner). */
export function createOwnerPool(ownerUrl: string, options: Omit<PoolOptions, 'role' | 'owner'> = {}): pg.Pool {
  return createPool(ownerUrl, { max: 2, applicationName: 'trainsync-migrate', ...options, owner: true });
}

/** A role name as an SQL identifier (ours are plain names; anything else is refused, never spliced). */
function quoteRole(role: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(role)) throw new Error(`not a plain role name: ${JSON.stringify(role)}`);
  return `"${role}"`;
}

/**
 * A pg client that gives up connecting after CONNECT_TIMEOUT_MS. The pool's own
 * `connectionTimeoutMillis` would also bound the wait for a free connection of a full
 * pool, failing a job with "timeout exceeded when trying to connect" (read as a
 * Postgres outage) when the pool is merely busy; with a bounded pool, jobs wait for a
 * connection as long as it takes, and only a server that does not answer fails them.
 */
class TimedClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super({ ...(typeof config === 'string' ? { connectionString: config } : config), connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  }
}

/** The error's code and message: pg attaches the whole client to it (`err.client`), far too much for a log line. */
function briefly(error: Error): { code?: string; reason: string } {
  const code = (error as { code?: unknown }).code;
  return { ...(typeof code === 'string' ? { code } : {}), reason: error.message };
}

/**
 * A pg pool whose sessions run in UTC (`TimeZone=UTC`), so instants never depend on
 * the server's or the host's zone, with JIT off, and whose int8 columns read as numbers.
 */
export function createPool(databaseUrl: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    // Set once a connection opens, not as the `options` startup parameter, which PgBouncer
    // refuses ("unsupported startup parameter"). TimeZone is a parameter PgBouncer tracks
    // per client and sets on whichever server connection serves it, so it holds under
    // transaction pooling too. JIT compiles for seconds-long analytics; on our short bulk
    // statements its misestimated costs (temp tables have no statistics) cost 50-100 ms a
    // batch. PgBouncer does not track jit: behind it, set it server-side
    // (docs/operator.md, "Behind PgBouncer"). The role: trainsync's own pool takes
    // trainsync_app here, and every scoped transaction takes it again with
    // set_config('role', …, true) (src/warehouse/scope.ts), which is what binds it behind a
    // transaction-mode pooler, where a session's SET reaches one server connection only.
    onConnect: async (client) => {
      await client.query(`set TimeZone = 'UTC'; set jit = off${options.role ? `; set role ${quoteRole(options.role)}` : ''}${options.owner ? OWNER_SETTINGS : ''}`);
    },
    application_name: options.applicationName ?? 'trainsync',
    // TCP keepalives from 10 s of idleness: an idle connection whose server vanished
    // without a word (a failover to another host, a dropped network), such as the one
    // holding a job's advisory lock, fails after the OS's probes (about 11 minutes on
    // Linux defaults) rather than never.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // A server that does not answer at all (a host down, a firewall) fails the connect
    // instead of hanging a command forever (TimedClient: the connect only, not the wait
    // for a free connection).
    Client: TimedClient,
    types,
  });
  // A pg client whose server goes away (a restart, a failover, a forced drop) emits
  // 'error'; with no listener that is an unhandled 'error' event and ends the process.
  // The pool listens to its idle clients only, so every client gets a listener of its
  // own for life: a checked-out one (Kysely's queries and transactions, lent clients)
  // reports the failure through the query it was running, and the pool drops it on
  // release because it is no longer queryable.
  pool.on('connect', (client) => {
    client.on('error', (error) => options.log?.debug(briefly(error), 'Postgres connection failed'));
  });
  // Idle connections failing: the pool drops them and opens new ones on demand. Debug
  // only: one server restart fails every connection at once, and whoever needs the
  // database reports the outage once (src/lib/outage-log.ts).
  pool.on('error', (error) => {
    options.log?.debug(briefly(error), 'idle Postgres connection failed');
  });
  return pool;
}

/** kysely over the pool; `db.destroy()` ends the pool too. */
export function createDb(pool: pg.Pool): Kysely<Database> {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
