import { errorMessage } from '../lib/errors.ts';
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
  metrics: Metrics;
  log: Logger;
  checks: HealthChecks;
}

/** The server /healthz and /metrics run on: every interface (probes come from the orchestrator), errors as text. */
function healthServerOptions(options: Pick<HealthServerOptions, 'port' | 'log'>): HttpServerOptions {
  return {
    name: 'health',
    port: options.port,
    host: '0.0.0.0',
    bodyLimit: { bytes: HEALTH_MAX_BODY_BYTES },
    rawBodies: true,
    errorBody: ({ detail }) => ({ type: 'text/plain', body: `${detail}\n` }),
    faultDetail: 'internal error; see the worker log',
    notFoundDetail: NOT_FOUND,
    log: options.log,
  };
}

/**
 * `/healthz` (200 when Postgres and Redis answer, 503 naming the one that does not, always
 * within a second) and `/metrics` (Prometheus text; served while a dependency is down, with
 * `trainsync_dependency_up` saying which one). The paths are matched exactly, whatever the method.
 */
export function healthServer(options: HealthServerOptions): ServerDefinition {
  const plugin: ServerPlugin = async (server) => {
    server.route({
      method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'],
      url: '/*',
      handler: async (request, reply) => {
        if (request.url === '/healthz') {
          const failures = await runHealthChecks(options.checks);
          const ok = Object.keys(failures).length === 0;
          return reply.code(ok ? 200 : 503).type('application/json').send(Buffer.from(JSON.stringify({ status: ok ? 'ok' : 'unhealthy', failures })));
        }
        if (request.url === '/metrics') {
          const failures = await runHealthChecks(options.checks);
          for (const service of Object.keys(options.checks)) options.metrics.dependencyUp.set({ service }, service in failures ? 0 : 1);
          const body = await options.metrics.registry.metrics();
          return reply.type(options.metrics.registry.contentType).send(body);
        }
        return reply.code(404).type('text/plain').send(`${NOT_FOUND}\n`);
      },
    });
  };
  return { options: healthServerOptions(options), plugin };
}

/** Serves /healthz and /metrics on TRAINSYNC_METRICS_PORT. */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server = await startHttpServer(healthServer(options));
  options.log.info({ port: server.port }, 'serving /healthz and /metrics');
  return server;
}
