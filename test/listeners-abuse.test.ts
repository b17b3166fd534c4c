import net from 'node:net';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { startConsole } from '../src/console/server.ts';
import { MAX_HEADER_BYTES, MAX_URL_BYTES, PARSER_MAX_HEADER_BYTES, startHttpServer, type HttpServer } from '../src/http/server-factory.ts';
import { healthServer, runHealthChecks, startHealthServer } from '../src/runtime/health-server.ts';
import { scimServer, startScimServer, type ScimOrgRoute } from '../src/scim/server.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { startWebhookReceiver, webhookServer } from '../src/webhooks/receiver.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * Every listener trainsync runs (/healthz and /metrics, the webhook receiver, SCIM, the console)
 * against an attacker: each binds loopback unless told otherwise; /metrics asks for its token when
 * one is set; /healthz says up or down and never an error's words; an over-long URL gets 414 and
 * over-long headers 431 in the server's own format; and hostile request lines, paths and headers
 * (fast-check) never get a 5xx nor a reset connection, on every one of them.
 */

const CONSOLE_USER = { name: 'lena', password: 'listener-pass-1234' };
const SCIM_TOKEN = 'listeners-scim-token-0123456789';
const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

let h: SyncHarness;
const servers: HttpServer[] = [];
const started = async (server: Promise<HttpServer | undefined>): Promise<HttpServer> => {
  const s = (await server)!;
  servers.push(s);
  return s;
};

const notUsed = (): never => {
  throw new Error('not used here');
};

function scimRoute(): ScimOrgRoute {
  const scope = h.app.scopes.scope(DEFAULT_ORG);
  return {
    token: Buffer.from(SCIM_TOKEN),
    context: { scope, submit: notUsed, create: notUsed, checkPassword: notUsed, queuePassword: notUsed },
  };
}

const consoleDeps = () => ({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: notUsed });
const webhookDeps = () => ({ config: h.config, orgs: [{ slug: DEFAULT_ORG, keys: [Buffer.from('key')] }], scopes: h.app.scopes, queue: h.app.queue, metrics: h.app.metrics, log: h.app.log });

interface RawAnswer {
  /** The status of the answer, undefined when none came. */
  status: number | undefined;
  text: string;
  /** The connection was reset (or errored) rather than closed after an answer. */
  error: string | undefined;
}

/** Sends bytes as they are on a connection of its own and reads until the server closes it (or 10 s pass). */
function raw(port: number, request: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let error: string | undefined;
    const timer = setTimeout(() => {
      error = 'no close within 10 s';
      socket.destroy();
    }, 10_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const status = /^HTTP\/1\.[01] (\d{3}) /.exec(text)?.[1];
      resolve({ status: status === undefined ? undefined : Number(status), text, error });
    });
    socket.write(request);
  });
}

const get = (path: string, headers = ''): string => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Connection: close\r\n\r\n`;

beforeAll(async () => {
  const hash = await hashConsolePassword(CONSOLE_USER.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createSyncHarness({
    simulator: { seed: 13, sizes: { users: 3, courses: 1, results: 3 } },
    // No *_HOST: each listener where trainsync puts it by default; ports any.
    env: { TRAINSYNC_CONSOLE_USERS: `${CONSOLE_USER.name}:operator:${hash}`, TRAINSYNC_CONSOLE_PORT: '0', TRAINSYNC_WEBHOOK_PORT: '0', TRAINSYNC_SCIM_PORT: '0' },
  });
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await h?.close();
});

describe('where each listener binds', () => {
  it('every host setting defaults to loopback', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://127.0.0.1/x', REDIS_URL: 'redis://127.0.0.1:6379', TRAINSYNC_API_URL: 'http://127.0.0.1:9', TRAINSYNC_API_KEY: 'k' });
    expect([config.TRAINSYNC_METRICS_HOST, config.TRAINSYNC_WEBHOOK_HOST, config.TRAINSYNC_SCIM_HOST, config.TRAINSYNC_CONSOLE_HOST]).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']);
  });

  it('health and metrics, the webhook receiver, SCIM and the console are bound to 127.0.0.1 as configured by default', async () => {
    const c = h.config;
    const health = await started(startHealthServer({ port: 0, host: c.TRAINSYNC_METRICS_HOST, metrics: h.app.metrics, log: h.app.log, checks: {} }));
    const receiver = await started(startWebhookReceiver(webhookDeps()));
    const scim = await started(
      startScimServer({ port: 0, host: c.TRAINSYNC_SCIM_HOST, orgs: new Map([[DEFAULT_ORG, scimRoute()]]), bareOrg: DEFAULT_ORG, maxBodyBytes: 4096, maxInFlight: 4, log: h.app.log }),
    );
    const console = await started(startConsole(consoleDeps()));
    expect([health.address, receiver.address, scim.address, console.address]).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']);
    // And as asked when opened: every interface.
    const open = await started(startHealthServer({ port: 0, host: '0.0.0.0', metrics: h.app.metrics, log: h.app.log, checks: {} }));
    expect(open.address).toBe('0.0.0.0');
  });
});

describe('/metrics and /healthz', () => {
  it('/metrics with a token set: 401 and a Bearer challenge without it or with a wrong one; the metrics with it; /healthz open', async () => {
    const server = await started(startHealthServer({ port: 0, token: Buffer.from(METRICS_TOKEN), metrics: h.app.metrics, log: h.app.log, checks: {} }));
    const base = `http://127.0.0.1:${server.port}`;
    for (const authorization of [undefined, `Bearer ${METRICS_TOKEN}x`, `Bearer ${METRICS_TOKEN.slice(0, -1)}`, `Basic ${METRICS_TOKEN}`, METRICS_TOKEN, 'Bearer ']) {
      const answer = await fetch(`${base}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
      expect(answer.status, String(authorization)).toBe(401);
      expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
      expect(await answer.text()).not.toContain('trainsync_');
    }
    const scraped = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('trainsync_');
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
  });

  it('/metrics without a token set stays open (the default)', async () => {
    const server = await started(startHealthServer({ port: 0, metrics: h.app.metrics, log: h.app.log, checks: {} }));
    expect((await fetch(`http://127.0.0.1:${server.port}/metrics`)).status).toBe(200);
  });

  it('/healthz with Postgres and Redis unreachable: 503 and up/down only, never the errors (hosts, ports, codes)', async () => {
    // A port nothing listens on: taken, then let go.
    const closed = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const pool = new pg.Pool({ connectionString: `postgres://trainsync_secret_user@127.0.0.1:${closed}/warehouse_db`, connectionTimeoutMillis: 500 });
    pool.on('error', () => undefined);
    const redis = new Redis({ host: '127.0.0.1', port: closed, maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    redis.on('error', () => undefined);
    try {
      const checks = { postgres: () => pool.query('select 1'), redis: () => redis.connect().then(() => redis.ping()) };
      // What the checks themselves say names the host and port: that is what must not be served.
      expect(Object.values(await runHealthChecks(checks)).join(' ')).toMatch(/ECONNREFUSED|127\.0\.0\.1|Connection is closed/);
      const server = await started(startHealthServer({ port: 0, metrics: h.app.metrics, log: h.app.log, checks }));
      const answer = await fetch(`http://127.0.0.1:${server.port}/healthz`);
      const text = await answer.text();
      expect(answer.status).toBe(503);
      expect(JSON.parse(text)).toEqual({ status: 'degraded', postgres: 'down', redis: 'down' });
      for (const leak of ['ECONNREFUSED', '127.0.0.1', String(closed), 'trainsync_secret_user', 'warehouse_db', 'Error', 'at ']) expect(text).not.toContain(leak);
    } finally {
      await pool.end().catch(() => undefined);
      redis.disconnect();
    }
  });
});

describe('over-long URLs and headers, and what the parser refuses', () => {
  let targets: Array<{ name: string; port: number; type: string }>;

  beforeAll(async () => {
    const loopback = '127.0.0.1';
    const health = await started(startHttpServer(healthServer({ port: 0, host: loopback, token: Buffer.from(METRICS_TOKEN), metrics: h.app.metrics, log: h.app.log, checks: {} })));
    const webhookDefinition = webhookServer(webhookDeps());
    const receiver = await started(startHttpServer({ ...webhookDefinition, options: { ...webhookDefinition.options, port: 0, host: loopback } }));
    const scim = await started(
      startHttpServer(scimServer({ port: 0, host: loopback, orgs: new Map([[DEFAULT_ORG, scimRoute()]]), bareOrg: DEFAULT_ORG, maxBodyBytes: 4096, maxInFlight: 4, log: h.app.log })),
    );
    const console = await started(startConsole(consoleDeps()));
    targets = [
      { name: 'health', port: health.port, type: 'text/plain' },
      { name: 'webhooks', port: receiver.port, type: 'application/json' },
      { name: 'SCIM', port: scim.port, type: 'application/scim+json' },
      { name: 'console', port: console.port, type: 'text/html' },
    ];
  });

  it('a URL over 16 KB: 414 from every listener, in its own format, and a clean close', async () => {
    for (const target of targets) {
      for (const path of [`/healthz?${'a'.repeat(16 * 1024 + 1)}`, `/scim/v2/Users/${'b'.repeat(20_000)}`, `/webhooks/platform/${'%41'.repeat(7_000)}`, `/${'c'.repeat(MAX_URL_BYTES)}`]) {
        const answer = await raw(target.port, get(path));
        expect({ target: target.name, status: answer.status, error: answer.error }).toEqual({ target: target.name, status: 414, error: undefined });
        expect(/^content-type: ([^;\r]+)/im.exec(answer.text)?.[1]).toBe(target.type);
      }
    }
  });

  it('headers over the limit: 431; past what the parser reads (a URL of 100 KB too): 431, answered, not reset', async () => {
    for (const target of targets) {
      const many = Array.from({ length: 40 }, (_, i) => `X-Pad-${i}: ${'h'.repeat(500)}\r\n`).join('');
      expect(MAX_HEADER_BYTES).toBeLessThan(40 * 500);
      const big = await raw(target.port, get('/healthz', many));
      expect({ target: target.name, status: big.status, error: big.error }).toEqual({ target: target.name, status: 431, error: undefined });
      for (const request of [get('/healthz', `X-Huge: ${'h'.repeat(PARSER_MAX_HEADER_BYTES)}\r\n`), get(`/${'u'.repeat(100 * 1024)}`)]) {
        const answer = await raw(target.port, request);
        expect({ target: target.name, status: answer.status, error: answer.error }).toEqual({ target: target.name, status: 431, error: undefined });
      }
    }
  });

  it('CONNECT (no listener is a proxy): 405; an upgrade to another protocol: an answer, never a reset', async () => {
    for (const target of targets) {
      const connect = await raw(target.port, 'CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n');
      expect({ target: target.name, status: connect.status, error: connect.error }).toEqual({ target: target.name, status: 405, error: undefined });
      const upgrade = await raw(target.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n');
      expect({ target: target.name, error: upgrade.error, answered: upgrade.status !== undefined && upgrade.status < 500 }).toEqual({ target: target.name, error: undefined, answered: true });
    }
  });

  it('a request that is not HTTP: 400, answered, not reset', async () => {
    for (const target of targets) {
      for (const request of ['HELLO\r\n\r\n', 'GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n', 'GET /\x00 HTTP/1.1\r\n\r\n', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03']) {
        const answer = await raw(target.port, request);
        expect({ target: target.name, request, status: answer.status, error: answer.error }).toEqual({ target: target.name, request, status: 400, error: undefined });
      }
    }
  });

  // Header names a generated request does not choose: they would make a valid request wait for a body never sent, or keep the connection open.
  const RESERVED = /^(content-length|transfer-encoding|expect|connection|host)$/i;
  const token = fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}$/);
  const hostileText = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.stringMatching(/^[%./\\?#;:@&=+$,~!*'()[\]{}|^`"<> a-zA-Z0-9\t]{0,80}$/),
    fc.constantFrom('%', '%%', '%zz', '%E0%A4%A', '..', '/../../etc/passwd', '//', '%00', '\u0000', '\r', '\n', '\u2028', '😀', 'é'),
    fc.integer({ min: 1, max: 70 * 1024 }).map((n) => 'x'.repeat(n)),
  );
  const method = fc.oneof(fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'CONNECT', 'get', 'M-SEARCH'), token, fc.string({ maxLength: 12 }));
  const path = fc
    .tuple(fc.constantFrom('/', '/healthz', '/metrics', '/login', '/queues/', '/assets/', '/scim/v2/Users', '/scim/v2/Groups/', '/webhooks/platform', '/webhooks/platform/default', '', '*', 'http://evil.example/'), hostileText)
    .map(([prefix, rest]) => `${prefix}${rest}`);
  const headers = fc.array(
    fc.tuple(fc.oneof(token, fc.string({ maxLength: 20 }), fc.constantFrom('Authorization', 'Cookie', 'X-Forwarded-For', 'X-Forwarded-Proto', 'Content-Type', 'Upgrade', 'Sec-Fetch-Site')), hostileText),
    { maxLength: 6 },
  );
  const version = fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/1.1x', '');

  it('hostile request lines, paths and headers: every listener answers, never a 5xx, never a reset', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), method, path, headers, version, async (target, m, p, hs, v) => {
        const lines = hs.filter(([name]) => !RESERVED.test(name)).map(([name, value]) => `${name}: ${value}\r\n`);
        const request = Buffer.from(`${m} ${p} ${v}\r\nHost: 127.0.0.1\r\n${lines.join('')}Connection: close\r\n\r\n`, 'utf8');
        const answer = await raw(target.port, request);
        expect(answer.error, `${target.name}: ${JSON.stringify(request.toString('latin1').slice(0, 300))}`).toBeUndefined();
        expect(answer.status, `${target.name}: ${JSON.stringify(request.toString('latin1').slice(0, 300))}\n${answer.text.slice(0, 300)}`).toBeDefined();
        expect(answer.status!, `${target.name}: ${JSON.stringify(request.toString('latin1').slice(0, 300))}\n${answer.text.slice(0, 300)}`).toBeLessThan(500);
      }),
      { numRuns: Number(process.env.LISTENER_RUNS ?? 300) },
    );
  });
});
