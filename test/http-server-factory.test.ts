import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleServer } from '../src/console/server.ts';
import { HttpError } from '../src/http/http-error.ts';
import { startHttpServer, type HttpServer, type ServerDefinition, type ServerPlugin } from '../src/http/server-factory.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { healthServer } from '../src/runtime/health-server.ts';
import { scimServer, type ScimOrgRoute } from '../src/scim/server.ts';
import { webhookServer } from '../src/webhooks/receiver.ts';
import { consoleSession } from './helpers/console-http.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

/**
 * The HTTP server factory (src/http) over real HTTP: on each server built with it (SCIM, the
 * webhook receiver, /healthz and /metrics, the console) a body over the limit gets the same 413
 * (the same words naming the limit, `Connection: close`) and a route that throws gets the mapped
 * 500, in that server's body format, without the error's message; and the factory's own rules
 * (a refusal's status and headers, 404s, malformed escapes, graceful close) on a server of its own.
 */

const LIMIT = 4_096;
const SECRET = 'relation "trainsync.secret_table" does not exist at 10.0.0.7:5432';
const CONSOLE_USER = { name: 'fay', password: 'factory-pass-1234' };
const SCIM_TOKEN = 'factory-scim-token';

let h: SyncHarness;
const servers: HttpServer[] = [];

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request on its own connection, so a 413's `Connection: close` is seen as sent. */
function request(port: number, method: string, path: string, options: { headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const req = http.request(
      { host: '127.0.0.1', port, method, path, agent: false, headers: { ...options.headers, ...(body ? { 'content-length': String(body.length) } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A server as its wing defines it, with one more route beside the wing's: one that throws. */
async function startWithThrowingRoute(definition: ServerDefinition, method: 'GET' | 'POST', path: string): Promise<HttpServer> {
  const plugin: ServerPlugin = async (server) => {
    await definition.plugin(server);
    server.route({
      method,
      url: path,
      handler: async () => {
        throw new Error(SECRET);
      },
    });
  };
  const server = await startHttpServer({ options: { ...definition.options, port: 0, host: '127.0.0.1' }, plugin });
  servers.push(server);
  return server;
}

const overLimit = (): string => JSON.stringify({ padding: 'x'.repeat(LIMIT + 100) });

beforeAll(async () => {
  const hash = await hashConsolePassword(CONSOLE_USER.password, { N: 2 ** 12, r: 8, p: 1 });
  h = await createSyncHarness({
    simulator: { seed: 11, sizes: { users: 3, courses: 1, results: 3 } },
    env: {
      TRAINSYNC_CONSOLE_USERS: `${CONSOLE_USER.name}:operator:${hash}`,
      TRAINSYNC_CONSOLE_PORT: '0',
      TRAINSYNC_WEBHOOK_PORT: '0',
      TRAINSYNC_WEBHOOK_HOST: '127.0.0.1',
      TRAINSYNC_WEBHOOK_MAX_BODY_BYTES: String(LIMIT),
    },
  });
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await h?.close();
});

describe("each server's shared behaviour", () => {
  it('SCIM: the 413 and the mapped 500 in the SCIM error schema', async () => {
    const scope = h.app.scopes.scope(DEFAULT_ORG);
    const notUsed = (): never => {
      throw new Error('not used here');
    };
    const route: ScimOrgRoute = {
      token: Buffer.from(SCIM_TOKEN),
      context: { scope, submit: notUsed, create: notUsed, checkPassword: notUsed, queuePassword: notUsed },
    };
    const definition = scimServer({ port: 0, host: '127.0.0.1', orgs: new Map([[DEFAULT_ORG, route]]), bareOrg: DEFAULT_ORG, maxBodyBytes: LIMIT, maxInFlight: 8, log: h.app.log });
    const server = await startWithThrowingRoute(definition, 'GET', '/scim/v2/default/Boom');
    const auth = { authorization: `Bearer ${SCIM_TOKEN}`, 'content-type': 'application/scim+json' };

    const big = await request(server.port, 'POST', '/scim/v2/Users', { headers: auth, body: overLimit() });
    expect(big.status).toBe(413);
    expect(big.headers.connection).toBe('close');
    expect(big.headers['content-type']).toBe('application/scim+json; charset=utf-8');
    expect(JSON.parse(big.text)).toEqual({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '413', detail: `the body is over ${LIMIT} bytes (TRAINSYNC_SCIM_MAX_BODY_BYTES)` });

    const failed = await request(server.port, 'GET', '/scim/v2/default/Boom', { headers: auth });
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.text)).toEqual({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '500', detail: 'not recorded; try again later' });
    expect(failed.text).not.toContain('secret_table');
  });

  it('webhooks: the 413 and the mapped 500 as {"error"}', async () => {
    const orgs = [{ slug: 'north', keys: [Buffer.from('key')] }, { slug: 'boom', keys: [Buffer.from('key')] }];
    const definition = webhookServer({ config: h.config, orgs, scopes: h.app.scopes, queue: h.app.queue, metrics: h.app.metrics, log: h.app.log });
    // The throwing route is of an organisation's path: the receiver's gate answers any other 404 before a route.
    const server = await startWithThrowingRoute(definition, 'POST', '/webhooks/platform/boom');
    // The receiver's own route: the body limit applies before the signature is checked.
    const big = await request(server.port, 'POST', '/webhooks/platform/north', { headers: { 'content-type': 'application/json' }, body: overLimit() });
    expect(big.status).toBe(413);
    expect(big.headers.connection).toBe('close');
    expect(big.headers['content-type']).toBe('application/json');
    expect(JSON.parse(big.text)).toEqual({ error: `the body is over ${LIMIT} bytes (TRAINSYNC_WEBHOOK_MAX_BODY_BYTES)` });

    const failed = await request(server.port, 'POST', '/webhooks/platform/boom', { headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.text)).toEqual({ error: 'not stored; deliver again later' });
    expect(failed.text).not.toContain('secret_table');
  });

  it('health and metrics: the 413 and the mapped 500 as text', async () => {
    const definition = healthServer({ port: 0, metrics: h.app.metrics, log: h.app.log, checks: {} });
    const server = await startWithThrowingRoute(definition, 'GET', '/boom');
    expect((await request(server.port, 'GET', '/healthz')).status).toBe(200);
    const big = await request(server.port, 'POST', '/healthz', { body: 'x'.repeat(20 * 1024) });
    expect(big.status).toBe(413);
    expect(big.headers.connection).toBe('close');
    expect(big.text).toBe(`the body is over ${16 * 1024} bytes\n`);

    const failed = await request(server.port, 'GET', '/boom');
    expect(failed.status).toBe(500);
    expect(failed.text).toBe('internal error; see the worker log\n');
  });

  it('the console: the 413 and the mapped 500 as a page', async () => {
    const users = h.config.TRAINSYNC_CONSOLE_USERS!;
    const definition = consoleServer({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, log: h.app.log, health: async () => ({}), repair: () => { throw new Error('not used here'); } }, users);
    const server = await startWithThrowingRoute(definition, 'GET', '/boom');
    const big = await request(server.port, 'POST', '/login', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `username=${'x'.repeat(70 * 1024)}` });
    expect(big.status).toBe(413);
    expect(big.headers.connection).toBe('close');
    expect(big.headers['content-type']).toBe('text/html');
    expect(big.text).toContain(`the body is over ${64 * 1024} bytes`);

    const session = await consoleSession(`http://127.0.0.1:${server.port}`, CONSOLE_USER);
    const failed = await session.get('/boom');
    expect(failed.status).toBe(500);
    expect(failed.text).toContain('Something went wrong; see the worker log.');
    expect(failed.text).not.toContain('secret_table');
  });
});

describe("the factory's own rules", () => {
  let server: HttpServer;
  let release: () => void = () => undefined;
  const started: Array<() => void> = [];

  beforeAll(async () => {
    server = await startHttpServer({
      options: {
        name: 'test',
        port: 0,
        host: '127.0.0.1',
        bodyLimit: { bytes: 64, setting: 'TEST_LIMIT' },
        rawBodies: true,
        errorBody: ({ status, detail }) => ({ type: 'application/json', body: JSON.stringify({ status, detail }) }),
        faultDetail: 'it failed',
        notFoundDetail: 'no such path',
        log: h.app.log,
      },
      plugin: async (s) => {
        s.post('/echo', async (request) => ({ bytes: Buffer.isBuffer(request.body) ? request.body.length : 0 }));
        s.get('/refuse', async () => {
          throw new HttpError(409, 'already there', { 'x-why': 'taken' });
        });
        s.get('/segment/*', async (request) => ({ url: request.url, originalUrl: request.originalUrl }));
        s.get('/slow', async () => {
          await new Promise<void>((resolve) => {
            release = resolve;
            started.forEach((notify) => notify());
          });
          return { done: true };
        });
      },
    });
  });

  it('hands any content type over as the bytes received, within the limit; 413 past it', async () => {
    const small = await request(server.port, 'POST', '/echo', { headers: { 'content-type': 'text/anything' }, body: 'x'.repeat(64) });
    expect(JSON.parse(small.text)).toEqual({ bytes: 64 });
    const big = await request(server.port, 'POST', '/echo', { headers: { 'content-type': 'text/anything' }, body: 'x'.repeat(65) });
    expect(big.status).toBe(413);
    expect(JSON.parse(big.text)).toEqual({ status: 413, detail: 'the body is over 64 bytes (TEST_LIMIT)' });
  });

  it('answers a refusal with its status, detail and headers; an unknown path with the 404', async () => {
    const refused = await request(server.port, 'GET', '/refuse');
    expect(refused.status).toBe(409);
    expect(refused.headers['x-why']).toBe('taken');
    expect(JSON.parse(refused.text)).toEqual({ status: 409, detail: 'already there' });
    const missing = await request(server.port, 'GET', '/nowhere');
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.text)).toEqual({ status: 404, detail: 'no such path' });
  });

  it('routes a path with a malformed escape, keeping it as sent', async () => {
    const answer = await request(server.port, 'GET', '/segment/%E0%A4%A');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text).originalUrl).toBe('/segment/%E0%A4%A');
  });

  it('closes gracefully: a request in flight is answered, then the server is gone', async () => {
    const inFlight = new Promise<void>((resolve) => started.push(resolve));
    const answer = request(server.port, 'GET', '/slow');
    await inFlight;
    const closed = server.close();
    release();
    expect(JSON.parse((await answer).text)).toEqual({ done: true });
    await closed;
    await expect(request(server.port, 'GET', '/refuse')).rejects.toThrow(/ECONNREFUSED/);
  });
});
