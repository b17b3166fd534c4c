/**
 * Near-real-time results through the production path: a simulator (child process)
 * completes courses and delivers signed COURSE_COMPLETE events to `trainsync worker`
 * (child process), which stores, queues and loads each result within a request budget
 * of 10/s.
 *
 * 1. 1,000 completions at 5 a second: delivery-to-row latency (received_at → the
 *    transaction that wrote the row, as `trainsync_webhook_delivery_seconds` measures
 *    it; also from the event's `sent`), and events lost. Targets: 0 lost, p50 < 2 s.
 * 2. A burst of 1,000 at once: time from the burst to the last row, against
 *    1,000 ÷ budget = 100 s, and the most requests in any sliding second.
 *
 * Run: node bin/run-ts.js bench/webhooks.ts   (about six minutes)
 *      node bin/run-ts.js bench/webhooks.ts '{"steadyEvents":50,"burstEvents":50}'   (a quick look)
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { z } from 'zod';
import { freePort } from '../test/helpers/own-services.ts';
import { startSimulatorChild } from './simulator-child.ts';
import { startWorkerChild } from './worker-child.ts';

const STEADY_PER_SECOND = 5;
const BUDGET = 10;
const SIM_OPTIONS = { seed: 91, sizes: { users: 500, courses: 40, results: 1_000, groups: 3 } };

export interface WebhooksBench {
  budget: number;
  steady: {
    events: number;
    perSecond: number;
    /** received_at → row written (the metric's definition). */
    p50Ms: number;
    p99Ms: number;
    maxMs: number;
    /** The event's `sent` (simulator clock, same host) → row written. */
    sentToRowP50Ms: number;
    sentToRowP99Ms: number;
    lost: number;
    maxInAnySecond: number;
  };
  burst: {
    events: number;
    drainSeconds: number;
    idealSeconds: number;
    ratio: number;
    requests: number;
    maxInAnySecond: number;
    lost: number;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function admin<T>(url: string, method: 'GET' | 'POST', body: unknown, schema: z.ZodType<T>): Promise<T> {
  const response = await fetch(url, { method, ...(method === 'POST' ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) });
  if (!response.ok) throw new Error(`${method} ${url}: HTTP ${response.status} ${await response.text()}`);
  return schema.parse(response.status === 204 ? {} : await response.json());
}

const completionsSchema = z.object({ completions: z.array(z.object({ resultId: z.string(), eventIds: z.array(z.string()) })) });
const summarySchema = z.object({ total: z.number(), maxInAnyWindow: z.number(), byRoute: z.record(z.string(), z.number()) });

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const round = (value: number, digits = 0): number => Number(value.toFixed(digits));

/** Waits until every event has an outcome (or the deadline passes); returns how many have one. */
async function settled(db: pg.Client, eventIds: readonly string[], deadlineMs: number): Promise<number> {
  for (;;) {
    const { rows } = await db.query<{ n: number }>('select count(*)::int as n from trainsync.webhook_events where event_id = any($1) and outcome is not null', [eventIds]);
    if (rows[0]!.n === eventIds.length || Date.now() > deadlineMs) return rows[0]!.n;
    await sleep(250);
  }
}

/** Events whose result is in training.results with the score the platform gave it: anything else is lost. */
async function lostEvents(db: pg.Client, completions: ReadonlyArray<{ resultId: string; eventIds: string[] }>): Promise<number> {
  const eventIds = completions.flatMap((c) => c.eventIds);
  const { rows } = await db.query<{ n: number }>(
    `select count(*)::int as n from trainsync.webhook_events e
     join trainsync.webhook_event_results r on r.event_id = e.event_id
     join training.results t on t.result_id = r.result_id
     where e.event_id = any($1) and e.outcome = 'loaded'`,
    [eventIds],
  );
  return eventIds.length - rows[0]!.n;
}

export async function benchWebhooks(options: { steadyEvents?: number; burstEvents?: number } = {}): Promise<WebhooksBench> {
  const STEADY_EVENTS = options.steadyEvents ?? 1_000;
  const BURST_EVENTS = options.burstEvents ?? 1_000;
  const sim = await startSimulatorChild(SIM_OPTIONS);
  const dbName = `trainsync_bench_${randomBytes(4).toString('hex')}`;
  const prefix = `bench-${randomBytes(4).toString('hex')}`;
  const secret = randomBytes(32).toString('base64');
  const port = await freePort();
  const worker = startWorkerChild({
    TRAINSYNC_API_URL: sim.url,
    TRAINSYNC_API_KEY: sim.apiKey,
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${dbName}`,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_REQUESTS_PER_SECOND: String(BUDGET),
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_WEBHOOK_SECRET: secret,
    TRAINSYNC_WEBHOOK_PORT: String(port),
    TRAINSYNC_WEBHOOK_HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  });
  const db = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${dbName}` });
  try {
    const webhookUrl = `http://127.0.0.1:${port}/webhooks/platform`;
    for (let i = 0; ; i += 1) {
      const up = await fetch(webhookUrl).then((r) => r.status === 405, () => false);
      if (up) break;
      if (i > 300 || worker.child.exitCode !== null) throw new Error(`the worker did not start its receiver:\n${worker.output()}`);
      await sleep(100);
    }
    await db.connect();
    await admin(`${sim.url}/__simulator/webhooks/config`, 'POST', { url: webhookUrl, secret }, z.unknown());

    // 1. Steady: one completion every 200 ms, on a fixed schedule (no drift).
    await admin(`${sim.url}/__simulator/requests/reset`, 'POST', {}, z.unknown());
    const steady: Array<{ resultId: string; eventIds: string[] }> = [];
    const start = performance.now();
    for (let i = 0; i < STEADY_EVENTS; i += 1) {
      const due = start + (i * 1000) / STEADY_PER_SECOND;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      steady.push(...(await admin(`${sim.url}/__simulator/webhooks/complete`, 'POST', {}, completionsSchema)).completions);
    }
    const steadyIds = steady.flatMap((c) => c.eventIds);
    await settled(db, steadyIds, Date.now() + 120_000);
    const latencies = await db.query<{ received: number; sent: number }>(
      `select extract(epoch from processed_at - received_at)::float8 * 1000 as received,
              extract(epoch from processed_at - sent_at)::float8 * 1000 as sent
       from trainsync.webhook_events where event_id = any($1) and outcome = 'loaded'`,
      [steadyIds],
    );
    const received = latencies.rows.map((r) => r.received).sort((a, b) => a - b);
    const sent = latencies.rows.map((r) => r.sent).sort((a, b) => a - b);
    const steadyRequests = await admin(`${sim.url}/__simulator/requests/summary`, 'GET', undefined, summarySchema);

    // 2. Burst: 1,000 at once.
    await admin(`${sim.url}/__simulator/requests/reset`, 'POST', {}, z.unknown());
    const burstStarted = Date.now();
    const burst = (await admin(`${sim.url}/__simulator/webhooks/complete`, 'POST', { count: BURST_EVENTS }, completionsSchema)).completions;
    const burstIds = burst.flatMap((c) => c.eventIds);
    await settled(db, burstIds, Date.now() + 600_000);
    const last = await db.query<{ at: number }>('select extract(epoch from max(processed_at))::float8 * 1000 as at from trainsync.webhook_events where event_id = any($1)', [burstIds]);
    const drainSeconds = (last.rows[0]!.at - burstStarted) / 1000;
    const burstRequests = await admin(`${sim.url}/__simulator/requests/summary`, 'GET', undefined, summarySchema);
    const idealSeconds = BURST_EVENTS / BUDGET;

    return {
      budget: BUDGET,
      steady: {
        events: steadyIds.length,
        perSecond: STEADY_PER_SECOND,
        p50Ms: round(percentile(received, 50)),
        p99Ms: round(percentile(received, 99)),
        maxMs: round(received.at(-1) ?? Number.NaN),
        sentToRowP50Ms: round(percentile(sent, 50)),
        sentToRowP99Ms: round(percentile(sent, 99)),
        lost: await lostEvents(db, steady),
        maxInAnySecond: steadyRequests.maxInAnyWindow,
      },
      burst: {
        events: burstIds.length,
        drainSeconds: round(drainSeconds, 1),
        idealSeconds,
        ratio: round(drainSeconds / idealSeconds, 2),
        requests: burstRequests.total,
        maxInAnySecond: burstRequests.maxInAnyWindow,
        lost: await lostEvents(db, burst),
      },
    };
  } finally {
    await db.end().catch(() => undefined);
    worker.child.kill('SIGTERM');
    await new Promise((resolve) => (worker.child.exitCode === null ? worker.child.once('exit', resolve) : resolve(undefined)));
    sim.stop();
    const adminDb = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
    await adminDb.connect();
    await adminDb.query(`drop database if exists ${dbName} with (force)`).finally(() => adminDb.end());
    const redis = new Redis('redis://127.0.0.1:6379');
    for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>) if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const options = z.object({ steadyEvents: z.number().int().positive(), burstEvents: z.number().int().positive() }).partial().parse(JSON.parse(process.argv[2] ?? '{}'));
  const result = await benchWebhooks(options);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
