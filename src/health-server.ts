import { errorMessage } from './errors.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from './log.ts';
import type { Metrics } from './metrics.ts';

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `/healthz` (200 when Postgres and Redis answer, 503 naming the one that does
 * not) and `/metrics` (Prometheus text) for the worker.
 */
export async function startHealthServer(options: {
  port: number;
  metrics: Metrics;
  log: Logger;
  checks: Record<string, () => Promise<unknown>>;
}): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    void (async () => {
      try {
        if (req.url === '/healthz') {
          const failures: Record<string, string> = {};
          await Promise.all(
            Object.entries(options.checks).map(async ([name, check]) => {
              try {
                await check();
              } catch (error) {
                failures[name] = errorMessage(error);
              }
            }),
          );
          const ok = Object.keys(failures).length === 0;
          res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ status: ok ? 'ok' : 'unhealthy', failures }));
        } else if (req.url === '/metrics') {
          const body = await options.metrics.registry.metrics();
          res.writeHead(200, { 'content-type': options.metrics.registry.contentType });
          res.end(body);
        } else {
          res.writeHead(404, { 'content-type': 'text/plain' });
          res.end('not found: try /healthz or /metrics\n');
        }
      } catch (error) {
        options.log.error({ err: error }, 'health server error');
        res.writeHead(500).end();
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
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
