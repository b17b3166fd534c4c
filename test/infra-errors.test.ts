import { connect } from 'node:net';
import { Redis } from 'ioredis';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { describeDatabaseError, describeRedisError, InfrastructureError, maskUrl, toInfrastructureError } from '../src/lib/infra-errors.ts';
import { freePort } from './helpers/own-services.ts';

// The same servers the global setup checks; these tests only connect, never write.
const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const LIVE_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A port nothing listens on: bind an ephemeral one, then let it go. */
/** The error a real pg.Client raises when connecting to `url`. */
async function pgConnectError(url: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    return error;
  } finally {
    await client.end().catch(() => undefined);
  }
  throw new Error(`expected connecting to ${maskUrl(url)} to fail`);
}

/** The admin URL with another user, database or password. */
function adminWith(change: (url: URL) => void): string {
  const url = new URL(ADMIN_URL);
  change(url);
  return url.toString();
}

function expectOneSafeLine(message: string | undefined, setting: string, secret: string): asserts message is string {
  expect(message).toBeDefined();
  expect(message).toContain(setting);
  expect(message).not.toContain(secret);
  expect(message).toContain('***');
  expect(message).not.toContain('\n');
}

describe('maskUrl', () => {
  it('masks the password and keeps user, host, port and path', () => {
    expect(maskUrl('postgres://app:hunter2@db:5432/trainsync')).toBe('postgres://app:***@db:5432/trainsync');
    expect(maskUrl('redis://:hunter2@127.0.0.1:6379/0')).toBe('redis://:***@127.0.0.1:6379/0');
    expect(maskUrl('rediss://default:hunter2@cache.example.com:6380')).toBe('rediss://default:***@cache.example.com:6380');
  });

  it('leaves a URL without a password as it is', () => {
    expect(maskUrl('postgres://postgres@127.0.0.1:5432/trainsync')).toBe('postgres://postgres@127.0.0.1:5432/trainsync');
    expect(maskUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
  });

  it('masks a percent-encoded password with special characters, and ?password=', () => {
    const masked = maskUrl('postgres://app:p%40ss%3Aw%2Frd%23%3F@db:5432/trainsync?sslmode=require');
    expect(masked).toBe('postgres://app:***@db:5432/trainsync?sslmode=require');
    expect(maskUrl('postgres://app@db/trainsync?password=hunter2')).toBe('postgres://app@db/trainsync?password=***');
    expect(maskUrl('postgres://app:hunter2@/trainsync?host=/var/run/postgresql')).toBe('postgres://app:***@/trainsync?host=/var/run/postgresql');
  });

  it('shows nothing of an unparsable URL past its scheme', () => {
    // Unencoded '@', '/' and '#' in a password: WHATWG URL either fails or splits the password off as port and path.
    for (const url of ['postgres://app:Qx7@Zk9:2/x@db/x', 'postgres://app:12/Qx7Zk9@db/x', 'postgres://app:Qx7#Zk9@db/x']) {
      const masked = maskUrl(url);
      expect(masked).toMatch(/^postgres:\/\/\(unparsable URL/);
      for (const piece of ['Qx7', 'Zk9', '12', 'db']) expect(masked).not.toContain(piece);
    }
    expect(maskUrl('not a url')).toBe('(unparsable URL)');
  });
});

describe('describeDatabaseError with real pg errors', () => {
  it('says connection refused for a closed port, naming DATABASE_URL', async () => {
    const url = `postgres://app:pg-secret-1@127.0.0.1:${await freePort()}/trainsync`;
    const message = describeDatabaseError(await pgConnectError(url), url);
    expectOneSafeLine(message, 'DATABASE_URL', 'pg-secret-1');
    expect(message).toMatch(/^cannot connect to Postgres at postgres:\/\/app:\*\*\*@127\.0\.0\.1:\d+\/trainsync \(DATABASE_URL\): connection refused; is the server running/);
  });

  it('looks inside the AggregateError of a happy-eyeballs connect (one error per address, empty message)', async () => {
    const port = await freePort();
    // A host with two addresses, as "localhost" has on a dual-stack machine: node tries both and aggregates.
    const error = await new Promise<unknown>((resolve) => {
      const socket = connect({
        host: 'db.test',
        port,
        autoSelectFamily: true,
        lookup: (_host, _options, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }, { address: '127.0.0.2', family: 4 }]),
      });
      socket.on('error', resolve);
    });
    expect(error).toBeInstanceOf(AggregateError);
    expect((error as AggregateError).message).toBe('');
    const config = { DATABASE_URL: `postgres://app:pg-secret-2@db.test:${port}/trainsync`, REDIS_URL: 'redis://127.0.0.1:6379' };
    const message = describeDatabaseError(error, config.DATABASE_URL);
    expectOneSafeLine(message, 'DATABASE_URL', 'pg-secret-2');
    expect(message).toContain('connection refused');
    // Only the wrapped errors carry the port, and that is enough to tell the service.
    expect(toInfrastructureError(error, config)?.service).toBe('postgres');
  });

  it('names the user for a role that does not exist', async () => {
    const url = adminWith((u) => {
      u.username = 'nobody';
      u.password = 'pg-secret-3';
    });
    const error = await pgConnectError(url);
    // 28000 under trust auth; a server asking for a password says 28P01 for unknown roles too.
    expect(['28000', '28P01']).toContain((error as { code?: string }).code);
    const message = describeDatabaseError(error, url);
    expectOneSafeLine(message, 'DATABASE_URL', 'pg-secret-3');
    expect(message).toMatch(/"nobody".*check the user/);
  });

  it('says to create a database that does not exist', async () => {
    const url = adminWith((u) => {
      u.pathname = `/trainsync_missing_${process.pid}`;
      // Ignored by a trust server, kept by a password one: either way it must not leak.
      u.password ||= 'pg-secret-4';
    });
    const error = await pgConnectError(url);
    expect((error as { code?: string }).code).toBe('3D000');
    const message = describeDatabaseError(error, url);
    expectOneSafeLine(message, 'DATABASE_URL', new URL(url).password);
    expect(message).toContain(`database "trainsync_missing_${process.pid}" does not exist; create it`);
  });

  it('leaves query errors to the caller', async () => {
    const client = new pg.Client({ connectionString: ADMIN_URL });
    await client.connect();
    try {
      const error = await client.query('select * from no_such_table_here').catch((e: unknown) => e);
      expect((error as { code?: string }).code).toBe('42P01');
      expect(describeDatabaseError(error, ADMIN_URL)).toBeUndefined();
      expect(toInfrastructureError(error, { DATABASE_URL: ADMIN_URL, REDIS_URL: LIVE_REDIS_URL })).toBeUndefined();
    } finally {
      await client.end();
    }
    expect(describeDatabaseError(new Error('boom'), ADMIN_URL)).toBeUndefined();
    expect(describeDatabaseError('not even an error', ADMIN_URL)).toBeUndefined();
  });
});

describe('describeRedisError with real ioredis errors', () => {
  /**
   * Connects once and gives up. ioredis emits the real cause (ECONNREFUSED, WRONGPASS)
   * as an 'error' event, while connect() and later commands only reject with
   * "Connection is closed.": both must give a useful line.
   */
  async function redisFailure(url: string): Promise<{ emitted: unknown; connectError: unknown; commandError: unknown }> {
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    const emitted: unknown[] = [];
    redis.on('error', (error: unknown) => emitted.push(error));
    try {
      const connectError = await redis.connect().then(
        () => undefined,
        (e: unknown) => e,
      );
      const commandError = await redis.ping().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(emitted).toHaveLength(1);
      return { emitted: emitted[0], connectError, commandError };
    } finally {
      redis.disconnect();
    }
  }

  it('says connection refused for a closed port, naming REDIS_URL', async () => {
    const url = `redis://:redis-secret-1@127.0.0.1:${await freePort()}`;
    const { emitted, connectError, commandError } = await redisFailure(url);
    const message = describeRedisError(emitted, url);
    expectOneSafeLine(message, 'REDIS_URL', 'redis-secret-1');
    expect(message).toMatch(/^cannot connect to Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ \(REDIS_URL\): connection refused; is the server running/);
    for (const error of [connectError, commandError]) {
      expect(String(error)).toContain('Connection is closed');
      const lost = describeRedisError(error, url);
      expectOneSafeLine(lost, 'REDIS_URL', 'redis-secret-1');
      expect(lost).toContain('lost the connection (Connection is closed.)');
    }
  });

  it('says to check the password when the server rejects the credentials', async () => {
    const url = new URL(LIVE_REDIS_URL);
    url.username = 'nobody';
    url.password = 'redis-secret-2';
    const { emitted, connectError } = await redisFailure(url.toString());
    expect(String(emitted)).toMatch(/WRONGPASS/);
    const message = describeRedisError(emitted, url.toString());
    expectOneSafeLine(message, 'REDIS_URL', 'redis-secret-2');
    expect(message).toContain('check the user name and password in REDIS_URL');
    expectOneSafeLine(describeRedisError(connectError, url.toString()), 'REDIS_URL', 'redis-secret-2');
  });

  it('leaves command errors to the caller', async () => {
    const redis = new Redis(LIVE_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await redis.connect();
      const error = await redis.call('no-such-command').catch((e: unknown) => e);
      expect(String(error)).toMatch(/unknown command/);
      expect(describeRedisError(error, LIVE_REDIS_URL)).toBeUndefined();
    } finally {
      redis.disconnect();
    }
  });
});

describe('toInfrastructureError', () => {
  it('tells Postgres from Redis by the port the socket tried, and keeps the cause', async () => {
    const dbPort = await freePort();
    const config = { DATABASE_URL: `postgres://app:pg-secret-5@127.0.0.1:${dbPort}/trainsync`, REDIS_URL: 'redis://:redis-secret-5@127.0.0.1:1' };
    const cause = await pgConnectError(config.DATABASE_URL);
    const error = toInfrastructureError(cause, config);
    expect(error).toBeInstanceOf(InfrastructureError);
    expect(error?.service).toBe('postgres');
    expect(error?.retryable).toBe(true);
    expect(error?.cause).toBe(cause);
    expectOneSafeLine(error?.message, 'DATABASE_URL', 'pg-secret-5');
    expect(toInfrastructureError(error, config)).toBe(error);
  });

  it('recognises ioredis errors, or takes the service it is told', async () => {
    const config = { DATABASE_URL: ADMIN_URL, REDIS_URL: `redis://:redis-secret-6@127.0.0.1:${await freePort()}` };
    const redis = new Redis(config.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    let emitted: unknown;
    redis.on('error', (e: unknown) => (emitted = e));
    try {
      const closed = await redis.connect().catch((e: unknown) => e);
      // The socket error: told apart from Postgres by the port it tried.
      const error = toInfrastructureError(emitted, config);
      expect(error?.service).toBe('redis');
      expect(error?.message).toContain('connection refused');
      expectOneSafeLine(error?.message, 'REDIS_URL', 'redis-secret-6');
      // ioredis' own "Connection is closed." is recognised by its text.
      expect(toInfrastructureError(closed, config)?.service).toBe('redis');
      expect(toInfrastructureError(closed, config, 'redis')?.message).toContain('REDIS_URL');
    } finally {
      redis.disconnect();
    }
    expect(toInfrastructureError(new Error('boom'), config)).toBeUndefined();
  });
});
