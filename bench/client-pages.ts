import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createLogger } from '../src/runtime/log.ts';
import { createPlatformClient } from '../src/platform/client.ts';
import type { PlatformClient, ResultsQuery } from '../src/platform/types.ts';
import { startSimulatorChild } from './simulator-child.ts';

/**
 * Results pages per second through the whole platform client (shared Redis budget,
 * got, retry loop, zod per record, pagination) against the simulator in a child
 * process. The budget is set far above what can be reached, so it measures the
 * client's own cost: one sequential walk of ~1,000 pages, then 8 concurrent walks over
 * different date windows.
 * Run: node bin/run-ts.js bench/client-pages.ts
 */

const RESULTS = 200_000;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface ClientPagesFigures {
  sequentialPagesPerSecond: number;
  concurrentPagesPerSecond: number;
  sequentialPages: number;
  concurrentPages: number;
  concurrency: number;
  records: number;
  problems: number;
}

async function walk(client: PlatformClient, query: ResultsQuery): Promise<{ pages: number; records: number; problems: number }> {
  let pages = 0;
  let records = 0;
  let problems = 0;
  for await (const page of client.listResults(query)) {
    pages++;
    records += page.records.length;
    problems += page.problems.length;
  }
  return { pages, records, problems };
}

async function dropKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    for (const pattern of [`${prefix}*`]) {
      const keys = await redis.keys(pattern);
      if (keys.length > 0) await redis.del(...keys);
    }
  } finally {
    redis.disconnect();
  }
}

export async function benchClientPages(): Promise<ClientPagesFigures> {
  const sim = await startSimulatorChild({ sizes: { results: RESULTS } });
  const { url, apiKey } = sim;
  const keyPrefix = `bench-${randomUUID()}`;
  const client = createPlatformClient({
    apiUrl: url,
    apiKey,
    log: createLogger('warn'),
    redisUrl: REDIS_URL,
    keyPrefix,
    requestsPerSecond: 10_000,
  });
  try {
    // Warm-up: JIT, keep-alive sockets, the simulator's JSON cache.
    await walk(client, { startDate: '2024-12-01', endDate: '2024-12-15' });

    // ~1,000 pages of 50: 200,000 results over a year is ~16,700 a month.
    let t = performance.now();
    const sequential = await walk(client, { startDate: '2024-01-01', endDate: '2024-04-01' });
    const sequentialSeconds = (performance.now() - t) / 1000;

    const windows: ResultsQuery[] = Array.from({ length: 8 }, (_, i) => ({
      startDate: `2024-${String(i + 4).padStart(2, '0')}-01`,
      endDate: `2024-${String(i + 4).padStart(2, '0')}-20`,
    }));
    t = performance.now();
    const concurrent = await Promise.all(windows.map((w) => walk(client, w)));
    const concurrentSeconds = (performance.now() - t) / 1000;
    const concurrentPages = concurrent.reduce((n, w) => n + w.pages, 0);

    return {
      sequentialPagesPerSecond: Math.round(sequential.pages / sequentialSeconds),
      concurrentPagesPerSecond: Math.round(concurrentPages / concurrentSeconds),
      sequentialPages: sequential.pages,
      concurrentPages,
      concurrency: windows.length,
      records: sequential.records + concurrent.reduce((n, w) => n + w.records, 0),
      problems: sequential.problems + concurrent.reduce((n, w) => n + w.problems, 0),
    };
  } finally {
    await client.close();
    sim.stop();
    await dropKeys(keyPrefix);
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const f = await benchClientPages();
  process.stdout.write(
    `client results pages: sequential ${f.sequentialPagesPerSecond} pages/s (${f.sequentialPages} pages), ` +
      `${f.concurrency} concurrent walks ${f.concurrentPagesPerSecond} pages/s (${f.concurrentPages} pages); ${f.records} records, ${f.problems} problems\n`,
  );
  process.stdout.write(`${JSON.stringify(f)}\n`);
}
