import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type OwnPostgres, type OwnRedis, startOwnPostgres, startOwnRedis } from './helpers/own-services.ts';

/** A pg client whose background 'error' (server went away) is recorded instead of crashing vitest. */
async function connect(url: string): Promise<{ client: pg.Client; errors: Error[] }> {
  const client = new pg.Client({ connectionString: url });
  const errors: Error[] = [];
  client.on('error', (error) => errors.push(error));
  await client.connect();
  return { client, errors };
}

async function selectOne(url: string): Promise<number> {
  const { client } = await connect(url);
  try {
    const { rows } = await client.query<{ one: number }>('select 1 as one');
    return rows[0]?.one ?? 0;
  } finally {
    await client.end();
  }
}

/** One connection attempt, no retries: resolves to PONG or rejects. */
async function ping(url: string): Promise<string> {
  const redis = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await redis.ping();
  } finally {
    redis.disconnect();
  }
}

describe('own Postgres', () => {
  let server: OwnPostgres | undefined;
  afterAll(async () => {
    await server?.destroy();
  });

  it('answers, survives a restart, and ends connections held across it', async () => {
    server = await startOwnPostgres();
    expect(server.port).not.toBe(5432);
    expect(await selectOne(server.url())).toBe(1);

    const held = await connect(server.url());
    await server.restart();
    await expect(held.client.query('select 1')).rejects.toThrow();
    expect(held.errors.length).toBeGreaterThan(0);
    await held.client.end().catch(() => undefined);
    expect(await selectOne(server.url())).toBe(1);

    // A crash-like stop: connections are refused until start() (which runs recovery).
    await server.stop('immediate');
    await expect(selectOne(server.url())).rejects.toThrow();
    await server.start();
    expect(await selectOne(server.url())).toBe(1);

    await server.destroy();
    await server.destroy(); // safe twice
    await expect(selectOne(server.url())).rejects.toThrow();
  });

  it('falls back to initdb in a temp dir', async () => {
    const fallback = await startOwnPostgres({ method: 'initdb' });
    try {
      expect(await selectOne(fallback.url())).toBe(1);
      await fallback.restart();
      expect(await selectOne(fallback.url())).toBe(1);
    } finally {
      await fallback.destroy();
    }
  });
});

describe('own Redis', () => {
  let server: OwnRedis | undefined;
  afterAll(async () => {
    await server?.destroy();
  });

  it('answers PING, refuses when stopped, and comes back empty', async () => {
    server = await startOwnRedis();
    expect(server.port).not.toBe(6379);
    expect(await ping(server.url)).toBe('PONG');
    const writer = new Redis(server.url, { maxRetriesPerRequest: 1 });
    await writer.set('before-stop', '1');
    writer.disconnect();

    await server.stop();
    await expect(ping(server.url)).rejects.toThrow();

    await server.start();
    expect(await ping(server.url)).toBe('PONG');
    const reader = new Redis(server.url, { maxRetriesPerRequest: 1 });
    try {
      expect(await reader.dbsize()).toBe(0);
    } finally {
      reader.disconnect();
    }

    await server.destroy();
    await server.destroy(); // safe twice
    await expect(ping(server.url)).rejects.toThrow();
  });
});
