import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { got } from 'got';
import { Agent, request as undiciRequest } from 'undici';
import { createLogger } from '../src/runtime/log.ts';
import { createTransport, MAX_SOCKETS } from '../src/platform/http.ts';
import type { RequestBudget } from '../src/platform/request-budget.ts';
import { startSimulatorChild } from './simulator-child.ts';

/**
 * The HTTP client's own CPU per results page, got (as trainsync sets it up) beside
 * undici, against the simulator in a child process: the same GET, the same headers,
 * keep-alive, timeouts, the body read as text and parsed once. Also our whole
 * transport (got plus the retry loop, logging and metrics hook; the budget left out),
 * which is what a sync pays per page.
 * Run: node bin/run-ts.js bench/http-clients.ts
 */

const PAGES = 2_000;
const CONCURRENCY = 6;

export interface HttpClientFigures {
  pages: number;
  concurrency: number;
  /** CPU µs of this process per page, and pages per second, for each client. */
  clients: Record<string, { cpuMicrosPerPage: number; pagesPerSecond: number }>;
}

type Fetch = (page: number) => Promise<unknown>;

async function measure(fetchPage: Fetch): Promise<{ cpuMicrosPerPage: number; pagesPerSecond: number }> {
  for (let page = 1; page <= 100; page++) await fetchPage(page); // JIT and sockets warm
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < PAGES) {
        next += 1;
        await fetchPage((next % 900) + 1);
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return { cpuMicrosPerPage: Math.round((used.user + used.system) / PAGES), pagesPerSecond: Math.round(PAGES / ((performance.now() - started) / 1000)) };
}

export async function benchHttpClients(): Promise<HttpClientFigures> {
  const sim = await startSimulatorChild({ sizes: { results: 50_000 } });
  const { url, apiKey } = sim;
  const base = `${url}/api/v2/`;
  const headers = { authorization: `Bearer ${apiKey}`, accept: 'application/json, text/plain;q=0.9', 'user-agent': 'trainsync' };
  const gotClient = got.extend({
    timeout: { connect: 5_000, request: 30_000 },
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
    responseType: 'text',
    headers,
  });
  const dispatcher = new Agent({ connections: MAX_SOCKETS, connectTimeout: 5_000, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const noBudget: RequestBudget = {
    acquire: async () => undefined,
    pauseFor: async () => undefined,
    pausedForMs: async () => 0,
    minTimeMs: 0,
    leaseMs: 0,
    limiterId: '',
    pauseKey: '',
    close: async () => undefined,
  };
  const transport = createTransport({
    apiUrl: url,
    apiKey,
    log: createLogger('warn'),
    budget: noBudget,
    retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
    timeoutMs: 30_000,
    connectTimeoutMs: 5_000,
    onRequest: () => undefined,
  });
  const clients: Record<string, Fetch> = {
    got: (page) => gotClient(`${base}results?page=${page}`).then((response) => JSON.parse(response.body) as unknown),
    undici: async (page) => {
      const response = await undiciRequest(`${base}results?page=${page}`, { dispatcher, headers });
      return JSON.parse(await response.body.text()) as unknown;
    },
    'trainsync transport': (page) => transport.send({ method: 'GET', path: 'results', query: new URLSearchParams({ page: String(page) }), parse: (body) => JSON.parse(body) as unknown }),
  };
  try {
    const figures: HttpClientFigures['clients'] = {};
    // Two rounds, alternating, keeping each client's better one: the machine is shared.
    for (let round = 0; round < 2; round++) {
      for (const [name, fetchPage] of Object.entries(clients)) {
        const measured = await measure(fetchPage);
        const best = figures[name];
        if (best === undefined || measured.cpuMicrosPerPage < best.cpuMicrosPerPage) figures[name] = measured;
      }
    }
    return { pages: PAGES, concurrency: CONCURRENCY, clients: figures };
  } finally {
    transport.close();
    await dispatcher.close();
    sim.stop();
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const f = await benchHttpClients();
  for (const [name, c] of Object.entries(f.clients)) {
    process.stdout.write(`${name.padEnd(28)} ${String(c.cpuMicrosPerPage).padStart(5)} µs CPU per page of 50 (${(c.cpuMicrosPerPage / 50).toFixed(1)} per result), ${c.pagesPerSecond} pages/s\n`);
  }
  process.stdout.write(`${JSON.stringify(f)}\n`);
}
