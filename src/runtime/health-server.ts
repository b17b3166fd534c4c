import { errorMessage } from '../lib/errors.ts';
import { bearerTokenMatcher } from '../http/bearer-token.ts';
import { startHttpServer, type HttpServer, type HttpServerOptions, type ServerDefinition, type ServerPlugin } from '../http/server-factory.ts';
import type { Logger } from './log.ts';
import type { Metrics } from './metrics.ts';

export type HealthServer = HttpServer;

/** A dependency's check: resolves when it answers. Named by the service (`postgres`, `redis`). */
export type HealthChecks = Record<string, () => Promise<unknown>>;

/** Each check's own limit, so `/healthz` answers within a second even when a dependency hangs. */
export const CHECK_TIMEOUT_MS = 800;

/** Runs every check at once, each bounded by `timeoutMs`; returns the failures by name (empty when all answered). */
export async function runHealthChecks(checks: HealthChecks, timeoutMs = CHECK_TIMEOUT_MS): Promise<Record<string, string>> {
  const failures: Record<string, string> = {};
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const running = Promise.resolve().then(check);
        running.catch(() => undefined);
        await Promise.race([
          running,
          new Promise((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs))),
        ]);
      } catch (error) {
        failures[name] = errorMessage(error);
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return failures;
}

/** Scrapes and probes send no body: anything larger is refused (413) unread. */
export const HEALTH_MAX_BODY_BYTES = 16 * 1024;
const NOT_FOUND = 'not found: try /healthz or /metrics';

export interface HealthServerOptions {
  port: number;
  /** TRAINSYNC_METRICS_HOST; default loopback (127.0.0.1): the image sets 0.0.0.0. */
  host?: string;
  /** TRAINSYNC_METRICS_TOKEN: when set, /metrics answers only `Authorization: Bearer <token>`. */
  token?: Buffer | undefined;
  metrics: Metrics;
  log: Logger;
  checks: HealthChecks;
}

/** The server /healthz and /metrics run on: where TRAINSYNC_METRICS_HOST and _PORT say, errors as text. */
function healthServerOptions(options: Pick<HealthServerOptions, 'port' | 'host' | 'log'>): HttpServerOptions {
  return {
    name: 'health',
    port: options.port,
    host: options.host ?? '127.0.0.1',
    bodyLimit: { bytes: HEALTH_MAX_BODY_BYTES },
    rawBodies: true,
    errorBody: ({ detail }) => ({ type: 'text/plain', body: `${detail}\n` }),
    faultDetail: 'internal error; see the worker log',
    notFoundDetail: NOT_FOUND,
    log: options.log,
  };
}

/** What /healthz says: the state of each dependency by name, and overall. */
export type HealthState = { status: 'ok' | 'degraded' } & Record<string, 'up' | 'down' | 'ok' | 'degraded'>;

/**
 * The state alone: `up`/`down` per dependency. Never the failure's words, which name hosts,
 * ports, users and internals to anyone who can reach the port; those are in the worker log
 * (each outage's start and end) and on the console's health page, behind a log-in.
 */
export function healthState(checks: HealthChecks, failures: Record<string, string>): HealthState {
  const state: Record<string, 'up' | 'down'> = {};
  for (const name of Object.keys(checks)) state[name] = name in failures ? 'down' : 'up';
  return { status: Object.keys(failures).length === 0 ? 'ok' : 'degraded', ...state };
}

/** /metrics without the token: 401, and the scheme the scraper should use. */
const METRICS_CHALLENGE = 'Bearer realm="trainsync metrics"';

/** What /healthz answers, as its route's response schema (Fastify serializes the state by it). */
const HEALTH_STATE_SCHEMA = {
  type: 'object',
  properties: { status: { type: 'string', enum: ['ok', 'degraded'] } },
  required: ['status'],
  additionalProperties: { type: 'string', enum: ['up', 'down'] },
} as const;

/** Every method Fastify routes: the two paths answer whatever the method (a probe's HEAD, a scraper's POST). */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'];

/**
 * `/healthz` (200 when Postgres and Redis answer, 503 when one does not, always within a second;
 * its body the state alone, never an error's words) and `/metrics` (Prometheus text; served while
 * a dependency is down, with `trainsync_dependency_up` saying which one; with a token set, only
 * to `Authorization: Bearer <token>`), whatever the method; any other path is the factory's 404.
 */
export function healthServer(options: HealthServerOptions): ServerDefinition {
  const authorized = options.token ? bearerTokenMatcher(options.token) : (): boolean => true;
  const plugin: ServerPlugin = async (server) => {
    server.route({
      method: METHODS,
      url: '/healthz',
      schema: { response: { 200: HEALTH_STATE_SCHEMA, 503: HEALTH_STATE_SCHEMA } },
      handler: async (_request, reply) => {
        const failures = await runHealthChecks(options.checks);
        const state = healthState(options.checks, failures);
        if (state.status !== 'ok') options.log.debug({ failures }, '/healthz: a dependency is down');
        return reply.code(state.status === 'ok' ? 200 : 503).send(state);
      },
    });
    server.route({
      method: METHODS,
      url: '/metrics',
      handler: async (request, reply) => {
        if (!authorized(request.headers.authorization)) {
          return reply.code(401).header('www-authenticate', METRICS_CHALLENGE).type('text/plain').send('/metrics needs Authorization: Bearer <TRAINSYNC_METRICS_TOKEN>\n');
        }
        const failures = await runHealthChecks(options.checks);
        for (const service of Object.keys(options.checks)) options.metrics.dependencyUp.set({ service }, service in failures ? 0 : 1);
        const body = await options.metrics.registry.metrics();
        return reply.type(options.metrics.registry.contentType).send(body);
      },
    });
  };
  return { options: healthServerOptions(options), plugin };
}

/** Serves /healthz and /metrics on TRAINSYNC_METRICS_HOST:TRAINSYNC_METRICS_PORT. */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server = await startHttpServer(healthServer(options));
  options.log.info({ port: server.port, host: server.address, token: options.token !== undefined }, 'serving /healthz and /metrics');
  return server;
}
