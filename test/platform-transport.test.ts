import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { errors as undiciErrors } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime/log.ts';
import { createPlatformClient } from '../src/platform/client.ts';
import { classifyTransportError, PlatformError } from '../src/platform/errors.ts';
import type { PlatformClient, RequestEvent } from '../src/platform/types.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * The transport (src/platform/http.ts, on undici) keeps what got gave: a timeout over the
 * whole request, not only per phase, and writes sent as the vendor expects them. A tiny
 * node:http server of our own plays the platform and records what arrives.
 */

interface Arrived {
  method: string;
  url: string;
  authorization: string | undefined;
  contentType: string | undefined;
  contentLength: string | undefined;
  body: string;
}

describe('the platform transport', () => {
  const KEY = `transport-${randomUUID()}`;
  const arrived: Arrived[] = [];
  let server: http.Server;
  let url = '';
  let prefix: string;
  const clients: PlatformClient[] = [];

  beforeAll(async () => {
    prefix = testPrefix();
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        arrived.push({
          method: req.method ?? '',
          url: req.url ?? '',
          authorization: req.headers.authorization,
          contentType: req.headers['content-type'],
          contentLength: req.headers['content-length'],
          body: Buffer.concat(chunks).toString('utf8'),
        });
        if (req.url === '/api/v2/users/seats') {
          // Headers at once, then the body a byte at a time, each well inside any
          // per-chunk timeout, never finishing: only a whole-request timeout ends it.
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{"seatsInUse": 1');
          const drip = setInterval(() => res.write(' '), 20);
          res.on('close', () => clearInterval(drip));
          return;
        }
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    if (prefix) await dropPrefix(prefix);
  });

  const client = (timeoutMs: number): PlatformClient => {
    const made = createPlatformClient({ apiUrl: url, apiKey: KEY, log: createLogger('silent'), redisUrl: REDIS_URL, keyPrefix: prefix, requestsPerSecond: 2000, retryBaseDelayMs: 5, retries: 1, timeoutMs });
    clients.push(made);
    return made;
  };

  it('times out a body that keeps arriving past the whole-request timeout, and retries it', async () => {
    const before = arrived.length;
    // The attempts as the client made them: on a busy machine a retry's timeout can run out
    // before the server has even seen the request, so the server's count is not the measure.
    const attempts: RequestEvent[] = [];
    const made = createPlatformClient({ apiUrl: url, apiKey: KEY, log: createLogger('silent'), redisUrl: REDIS_URL, keyPrefix: prefix, requestsPerSecond: 2000, retryBaseDelayMs: 5, retries: 1, timeoutMs: 500, onRequest: (event) => attempts.push(event) });
    clients.push(made);
    const error = await made.getSeats().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true, status: undefined });
    expect(attempts.map((a) => [a.path, a.attempt, a.code])).toEqual([
      ['/api/v2/users/seats', 1, 'TIMEOUT'],
      ['/api/v2/users/seats', 2, 'TIMEOUT'],
    ]);
    expect(arrived.slice(before).every((a) => a.url === '/api/v2/users/seats')).toBe(true);
    expect(arrived.length - before).toBeGreaterThanOrEqual(1);
  });

  it('sends a JSON write with its content type, and a bodiless one with Content-Length: 0, each with the key', async () => {
    const before = arrived.length;
    const platform = client(5_000);
    await platform.setPassword('someone@example.com', 'pa55-word');
    await platform.disableUser('5d1c2a43-6f0b-4c6e-9a51-0a8f2f0f7e11');
    const [json, bodiless] = arrived.slice(before);
    expect(json).toMatchObject({ method: 'POST', url: '/api/v2/users/password?userIdentifier=someone%40example.com', authorization: `Bearer ${KEY}`, contentType: 'application/json' });
    expect(JSON.parse(json!.body)).toEqual({ password: 'pa55-word' });
    expect(bodiless).toMatchObject({ method: 'PATCH', url: '/api/v2/users/5d1c2a43-6f0b-4c6e-9a51-0a8f2f0f7e11/disable', authorization: `Bearer ${KEY}`, contentLength: '0', body: '' });
  });
});

describe('classifyTransportError with undici errors', () => {
  it('classifies undici timeouts, socket errors and aborts by code', () => {
    const classify = (error: Error): PlatformError => classifyTransportError(error, 'GET', '/api/v2/results');
    for (const timeout of [new undiciErrors.HeadersTimeoutError(), new undiciErrors.BodyTimeoutError(), new undiciErrors.ConnectTimeoutError()]) {
      expect(classify(timeout)).toMatchObject({ code: 'TIMEOUT', retryable: true });
    }
    expect(classify(new undiciErrors.SocketError('other side closed'))).toMatchObject({ code: 'NETWORK', retryable: true });
    expect(classify(new undiciErrors.RequestAbortedError())).toMatchObject({ code: 'ABORTED', retryable: true });
    expect(classify(new undiciErrors.InvalidArgumentError('invalid method'))).toMatchObject({ code: 'NETWORK', retryable: false });
  });
});
