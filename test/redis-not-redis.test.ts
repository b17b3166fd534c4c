/**
 * REDIS_URL pointing at a server that answers, but not in Redis's protocol (an HTTP port,
 * an SSH banner): one line naming host:port, what it sent and the fix, exit 2 (the
 * configuration's fault), at once rather than after TRAINSYNC_REDIS_TIMEOUT_MS of retries
 * and a stack of "Protocol error" records. Real servers on ephemeral loopback ports.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeFor } from '../src/commands/options/exit-codes.ts';
import { InfrastructureError } from '../src/lib/infra-errors.ts';
import { RedisConnections } from '../src/queue/connection.ts';
import { runCli, stderrSaid } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { capturingLogger } from './helpers/log-capture.ts';
import { testPrefix } from './helpers/redis.ts';

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function closeServer(server: net.Server): Promise<void> {
  if ('closeAllConnections' in server && typeof server.closeAllConnections === 'function') (server as http.Server).closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** What the one-shot commands said when they waited for an answer that never came as Redis. */
const TIMEOUT_WORDS = /no answer within|waited \d|gave up after|TRAINSYNC_REDIS_TIMEOUT_MS|Protocol error|ECONNRESET/;

describe('REDIS_URL at an HTTP server', () => {
  let web: http.Server;
  let port: number;
  let database: TestDatabase;
  const prefix = testPrefix();

  beforeAll(async () => {
    web = http.createServer((_request, response) => response.end('hello'));
    port = await listen(web);
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await closeServer(web);
    await database?.drop();
  });

  // A password in the URL: ioredis sends AUTH first; the line must still not show it.
  const env = (): Record<string, string> => ({
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL: `redis://:s3cret-pw@127.0.0.1:${port}`,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_API_URL: 'http://127.0.0.1:9',
    TRAINSYNC_API_KEY: 'k',
    // Were the protocol error waited out again, the message would say "waited 15 s".
    TRAINSYNC_REDIS_TIMEOUT_MS: '15000',
  });

  for (const args of [['status'], ['sync', 'courses']]) {
    it(`\`trainsync ${args.join(' ')}\` exits 2 with one line naming host:port and what answered`, async () => {
      const run = await runCli(args, env());
      const lines = stderrSaid(run.stderr).trimEnd().split('\n');
      expect(run.code, run.stderr).toBe(2);
      expect(lines, run.stderr).toHaveLength(1);
      expect(lines[0]).toBe(
        `trainsync: REDIS_URL: 127.0.0.1:${port} answered, but not as Redis (it sent "HTTP/1.1 400 Bad Request…"); point REDIS_URL at a Redis server, e.g. redis://127.0.0.1:6379`,
      );
      expect(run.stderr).not.toMatch(TIMEOUT_WORDS);
      expect(run.stderr + run.stdout).not.toContain('s3cret-pw');
    });
  }

  it('`trainsync doctor` fails the redis check as configuration (exit 2), with the fix', async () => {
    const run = await runCli(['doctor'], env());
    expect(run.code, run.stdout + run.stderr).toBe(2);
    const check = run.stdout.split('\n').findIndex((line) => line.startsWith('FAIL  redis '));
    expect(check, run.stdout).toBeGreaterThanOrEqual(0);
    const [line, fix] = run.stdout.split('\n').slice(check, check + 2);
    expect(line).toContain(`REDIS_URL: 127.0.0.1:${port} answered, but not as Redis (it sent "HTTP/1.1 400 Bad Request…")`);
    expect(fix).toContain('fix: point REDIS_URL at a Redis server');
    expect(run.stdout + run.stderr).not.toMatch(TIMEOUT_WORDS);
    expect(run.stdout + run.stderr).not.toContain('s3cret-pw');
  });
});

describe('REDIS_URL at a server that greets first (an SSH banner)', () => {
  let ssh: net.Server;
  let port: number;
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    // Greets every connection and keeps it open, as sshd does: ioredis reconnects, and meets the banner again.
    ssh = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
      socket.write('SSH-2.0-OpenSSH_9.6\r\n');
    });
    port = await listen(ssh);
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await closeServer(ssh);
  });

  it('a one-shot check rejects with the misconfigured error (exit 2), not a timeout', async () => {
    const { log, lines } = capturingLogger('debug');
    const redis = new RedisConnections({ url: `redis://127.0.0.1:${port}`, mode: 'one-shot', timeoutMs: 15_000, log });
    try {
      const error = await redis.check(20_000).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(InfrastructureError);
      const infra = error as InfrastructureError;
      // The banner's line end is not "more": no "…" after it.
      expect(infra.message).toBe(`REDIS_URL: 127.0.0.1:${port} answered, but not as Redis (it sent "SSH-2.0-OpenSSH_9.6"); point REDIS_URL at a Redis server, e.g. redis://127.0.0.1:6379`);
      expect(infra.misconfigured).toBe(true);
      expect(infra.retryable).toBe(false);
      expect(exitCodeFor(infra)).toBe(2);
      expect(lines.join('')).not.toMatch(/"Redis connection error"/);
    } finally {
      redis.close();
    }
  });

  it('the worker (persistent) logs it once however many reconnects, and health checks name it', async () => {
    const { log, lines } = capturingLogger('info');
    const redis = new RedisConnections({ url: `redis://127.0.0.1:${port}`, mode: 'persistent', timeoutMs: 1_000, log });
    const copy = redis.open();
    try {
      // Several reconnects (100 ms doubling) on two connections, each meeting the banner.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const outage = lines.filter((line) => line.includes('Redis unreachable'));
      expect(outage, lines.join('')).toHaveLength(1);
      expect(outage[0]).toContain(`127.0.0.1:${port} answered, but not as Redis (it sent \\"SSH-2.0-OpenSSH_9.6\\")`);
      expect(lines.join('')).not.toMatch(/"Redis connection error"|Protocol error/);
      const health = await redis.check(1_000, { failFast: true }).then(
        () => undefined,
        (e: unknown) => e as InfrastructureError,
      );
      expect(health?.misconfigured).toBe(true);
      expect(health?.message).toContain('answered, but not as Redis');
    } finally {
      copy.disconnect();
      redis.close();
    }
  });
});
