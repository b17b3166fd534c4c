import { errorMessage } from '../lib/errors.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from './log.ts';
import type { Metrics } from './metrics.ts';

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

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

/**
 * Serves `/healthz` (200 when Postgres and Redis answer, 503 naming the one that does
 * not, always within a second) and `/metrics` (Prometheus text; served while a
 * dependency is down, with `trainsync_dependency_up` saying which one).
 */
export async function startHealthServer(options: {
  port: number;
  metrics: Metrics;
  log: Logger;
  checks: HealthChecks;
}): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    void (async () => {
      try {
        if (req.url === '/healthz') {
          const failures = await runHealthChecks(options.checks);
          const ok = Object.keys(failures).length === 0;
          res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ status: ok ? 'ok' : 'unhealthy', failures }));
        } else if (req.url === '/metrics') {
          const failures = await runHealthChecks(options.checks);
          for (const service of Object.keys(options.checks)) options.metrics.dependencyUp.set({ service }, service in failures ? 0 : 1);
          const body = await options.metrics.registry.metrics();
          res.writeHead(200, { 'content-type': options.metrics.registry.contentType });
          res.end(body);
        } else {
          res.writeHead(404, { 'content-type': 'text/plain' });
          res.end('not found: try /healthz or /metrics\n');
        }
      } catch (error) {
        options.log.error({ err: error }, 'health server error');
        if (!res.headersSent) res.writeHead(500);
        res.end();
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '0.0.0.0', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  options.log.info({ port }, 'serving /healthz and /metrics');
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections of a scraper would hold close() open.
        server.closeAllConnections();
      }),
  };
}
